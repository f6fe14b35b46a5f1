/**
 * MachineService/Kubeconfig through the real gRPC API over mTLS: control planes only, a fresh admin certificate
 * per call (CN admin, O system:masters, backdated 10 s, cluster.adminKubeconfig.certLifetime), the cluster
 * endpoint, the accepted CAs, streamed as one tar.gz holding `kubeconfig` (0600).
 */
import { newSelfSignedCA } from "../../src/machinery/pki/ca.js";
import { X509Certificate } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import type { TestClient } from "../helpers/client.js";
import { accessHandlers } from "../../src/api/handlers/access.js";
import type { ApiDeps } from "../../src/api/deps.js";
import type { CallContext } from "../../src/api/transport/context.js";
import { Code, type ApiError } from "../../src/machinery/errors.js";
import { loadConfig } from "../../src/machinery/config/index.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

/** The entries of an uncompressed tar: name, mode, content. */
function untar(tar: Buffer): { name: string; mode: number; data: Buffer }[] {
  const out = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const name = h.subarray(0, 100).toString().replace(/\0.*$/s, "");
    const mode = parseInt(h.subarray(100, 108).toString().replace(/\0.*$/s, ""), 8);
    const size = parseInt(h.subarray(124, 136).toString().replace(/\0.*$/s, ""), 8);
    out.push({ name, mode, data: tar.subarray(off + 512, off + 512 + size) });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

/** A second, real CA the cluster also accepts (admission refuses certificates that do not parse). */
let OTHER_CA: string;

let cp: Harness;
let admin: TestClient;

beforeAll(async () => {
  const cfgs = await clusterConfigs();
  OTHER_CA = (await newSelfSignedCA({ subject: { commonName: "other" }, algorithm: "ecdsa" })).crt;
  const patch = parsePatch(
    `cluster:\n  adminKubeconfig:\n    certLifetime: 2h0m0s\n  acceptedCAs:\n    - crt: ${Buffer.from(OTHER_CA).toString("base64")}\n`,
  );
  cp = await startNode();
  const c = insecureClient(cp);
  await apply(c, applyPatches(cfgs.controlplane, [patch]));
  c.close();
  admin = mtlsClient(cp, talosconfigCreds(cfgs.talosconfig));
  await eventually(() => version(admin));
}, 60_000);

afterAll(async () => {
  admin?.close();
  await cp?.stop();
});

async function kubeconfig(c: TestClient) {
  const chunks = await c.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {});
  expect(chunks).toHaveLength(1);
  const entries = untar(gunzipSync(Buffer.from(chunks[0].bytes)));
  expect(entries.map((e) => [e.name, e.mode])).toEqual([["kubeconfig", 0o600]]);
  return { text: entries[0].data.toString(), doc: parse(entries[0].data.toString()) };
}

describe("MachineService/Kubeconfig", () => {
  it("a control plane hands out an admin kubeconfig for the cluster endpoint with a fresh certificate", async () => {
    const cfgs = await clusterConfigs();
    const before = Date.now();
    const { doc, text } = await kubeconfig(admin);
    expect(doc.apiVersion).toBe("v1");
    expect(doc.kind).toBe("Config");
    expect(doc["current-context"]).toBe("admin@demo");
    expect(doc.contexts).toEqual([{ name: "admin@demo", context: { cluster: "demo", namespace: "default", user: "admin@demo" } }]);
    expect(doc.clusters[0].name).toBe("demo");
    expect(doc.clusters[0].cluster.server).toBe("https://127.0.0.1:6443");
    // cluster.acceptedCAs, then the issuing CA.
    expect(Buffer.from(doc.clusters[0].cluster["certificate-authority-data"], "base64").toString()).toBe(OTHER_CA + cfgs.secrets.certs.k8s.crt);
    expect(text).toContain("preferences: {}\n");

    const user = doc.users[0];
    expect(user.name).toBe("admin@demo");
    const cert = new X509Certificate(Buffer.from(user.user["client-certificate-data"], "base64"));
    expect(cert.subject).toBe("O=system:masters\nCN=admin");
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]);
    expect(cert.verify(new X509Certificate(cfgs.secrets.certs.k8s.crt).publicKey)).toBe(true);
    const from = Date.parse(cert.validFrom);
    // Backdated by 10 s for clock skew (validFrom has second precision); lifetime from cluster.adminKubeconfig.
    expect(from).toBeLessThanOrEqual(before - 9_000);
    expect(from).toBeGreaterThanOrEqual(before - 12_000);
    expect(Math.round((Date.parse(cert.validTo) - from) / 1000)).toBe(2 * 3600 + 10);
    expect(Buffer.from(user.user["client-key-data"], "base64").toString()).toMatch(/PRIVATE KEY-----/);

    const again = await kubeconfig(admin);
    const cert2 = new X509Certificate(Buffer.from(again.doc.users[0].user["client-certificate-data"], "base64"));
    expect(cert2.serialNumber).not.toBe(cert.serialNumber);
  });

  // A local worker has no API certificate of its own (trustd issues it), so its guard is exercised on the handler.
  it("a worker, and a node without a machine type, answer Unimplemented with upstream's texts", async () => {
    const cfgs = await clusterConfigs();
    const call = (activeConfig: unknown) =>
      accessHandlers({ node: { activeConfig } } as unknown as ApiDeps).Kubeconfig({}, async () => {}, {} as CallContext).then(
        () => undefined,
        (e: ApiError) => [e.code, e.message],
      );
    expect(await call(loadConfig(cfgs.worker))).toEqual([Code.Unimplemented, "kubeconfig is only available on control plane nodes"]);
    expect(await call(undefined)).toEqual([Code.Unimplemented, "machine type is not set, cannot use kubeconfig API"]);
  });
});
