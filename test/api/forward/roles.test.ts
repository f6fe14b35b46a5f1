/**
 * The talos-role rule on one real node (mTLS, real certificates from the cluster's OS CA): the header speaks
 * for the caller only over an impersonator certificate (what a forwarding node presents).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { MachineService } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../../src/machinery/api/gen/common/common_pb.js";
import { Role } from "../../../src/machinery/role.js";
import type { TestClient } from "../../helpers/client.js";
import { applyControlPlane, clusterConfigs, eventually, mtlsClient, roleCreds, startNode, talosconfigCreds, version, type Harness } from "../harness.js";

let h: Harness;
const clients: TestClient[] = [];
const as = async (roles: string[]) => {
  const c = mtlsClient(h, await roleCreds(await clusterConfigs(), roles));
  clients.push(c);
  return c;
};
// Read is admin-only: allowed, it fails on the missing path instead of on authorization.
const read = (c: TestClient, metadata?: Record<string, string>) => c.stream(MachineService, "Read", m.ReadRequestSchema, DataSchema, { path: "/nonexistent/roles-test" }, { metadata });

beforeAll(async () => {
  h = await startNode();
  const cfgs = await applyControlPlane(h);
  const admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
  clients.push(admin);
  await eventually(() => version(admin), 20_000);
}, 60_000);
afterAll(async () => {
  for (const c of clients) c.close();
  await h?.stop();
});

describe("talos-role", () => {
  it("is ignored from a certificate that is not an impersonator's", async () => {
    const reader = await as([Role.Reader]);
    await expect(read(reader, { "talos-role": Role.Admin })).rejects.toMatchObject({ code: status.PERMISSION_DENIED, details: "not authorized" });
    const operatorAdmin = await as([Role.Operator]);
    await expect(read(operatorAdmin, { "talos-role": Role.Admin })).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
  });

  it("replaces an impersonator certificate's roles", async () => {
    const imp = await as([Role.Impersonator]);
    await expect(read(imp, { "talos-role": Role.Admin })).rejects.toMatchObject({ code: status.NOT_FOUND });
    await expect(read(imp, { "talos-role": Role.Reader })).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    expect((await version(imp, { "talos-role": Role.Reader })).messages).toHaveLength(1);
  });

  it("absent, an impersonator certificate alone allows nothing", async () => {
    const imp = await as([Role.Impersonator]);
    await expect(version(imp)).rejects.toMatchObject({ code: status.PERMISSION_DENIED, details: "not authorized" });
  });
});
