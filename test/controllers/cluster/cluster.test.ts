/** cluster.InfoController and cluster.NodeIdentityController with the real store and runtime (discovery: discovery.test.ts). */
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CLUSTER_NS, IdentityType, InfoType } from "../../../src/machinery/resources/types/cluster.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { infoController } from "../../../src/controllers/cluster/info.js";
import { base62, NODE_IDENTITY_FILE, nodeIdentityController } from "../../../src/controllers/cluster/node-identity.js";
import { controlPlaneConfig, eventually, publishConfig, spec, startRuntime } from "../runtime/harness.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 })));
});
const tmp = async () => {
  const d = await mkdtemp(join(tmpdir(), "machined-identity-"));
  dirs.push(d);
  return d;
};

describe("cluster.InfoController", () => {
  it("publishes cluster id and name from the config and removes them when the config goes", async () => {
    const s = new InMemoryState();
    startRuntime(s, [infoController()]);
    publishConfig(s, controlPlaneConfig());
    await eventually(() => !!spec(s, CLUSTER_NS, InfoType.type, "current"), 2000, "info");
    expect(spec(s, CLUSTER_NS, InfoType.type, "current")).toEqual({ clusterId: "cluster-id-1", clusterName: "demo" });
    expect(s.get({ namespace: CLUSTER_NS, type: InfoType.type, id: "current" })!.metadata.owner).toBe("cluster.InfoController");
    s.destroy({ namespace: "config", type: "MachineConfigs.config.talos.dev", id: "v1alpha1" }, "");
    await eventually(() => !spec(s, CLUSTER_NS, InfoType.type, "current"), 2000, "info gone");
  });
});

describe("cluster.NodeIdentityController", () => {
  it("generates a base62 id once, persists it atomically and reuses it on the next start", async () => {
    const dir = await tmp();
    const s1 = new InMemoryState();
    startRuntime(s1, [nodeIdentityController({ stateDir: dir, random: () => new Uint8Array(32).fill(7) })]);
    await eventually(() => !!spec(s1, CLUSTER_NS, IdentityType.type, "local"), 2000, "identity");
    const id = spec<{ nodeId: string }>(s1, CLUSTER_NS, IdentityType.type, "local")!.nodeId;
    expect(id).toBe(base62(new Uint8Array(32).fill(7)));
    expect(id).toMatch(/^[0-9A-Za-z]{40,44}$/);
    expect(await readFile(join(dir, NODE_IDENTITY_FILE), "utf8")).toBe(`nodeId: ${id}\n`);
    expect((await readdir(dir)).filter((n) => n.endsWith(".tmp"))).toEqual([]);

    // A second boot with a different random source must keep the persisted id.
    const s2 = new InMemoryState();
    startRuntime(s2, [nodeIdentityController({ stateDir: dir, random: () => new Uint8Array(32).fill(9) })]);
    await eventually(() => !!spec(s2, CLUSTER_NS, IdentityType.type, "local"), 2000, "identity again");
    expect(spec<{ nodeId: string }>(s2, CLUSTER_NS, IdentityType.type, "local")!.nodeId).toBe(id);
  });

  it("fails (and retries) on a corrupt identity file instead of silently replacing it", async () => {
    const dir = await tmp();
    await writeFile(join(dir, NODE_IDENTITY_FILE), "garbage: true\n");
    const s = new InMemoryState();
    const rt = startRuntime(s, [nodeIdentityController({ stateDir: dir })]);
    await eventually(() => (rt.status("cluster.NodeIdentityController")?.consecutiveFailures ?? 0) > 0, 2000, "failure");
    expect(rt.status("cluster.NodeIdentityController")!.lastError).toMatch(/no nodeId/);
    expect(spec(s, CLUSTER_NS, IdentityType.type, "local")).toBeUndefined();
  });
});
