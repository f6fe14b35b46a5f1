/** Static pod resources become manifest files in the kubelet's folder, and vanish with their resource. */
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { InMemoryState } from "../../../src/state/inmem.js";
import type { ControllerRuntime } from "../../../src/state/runtime/index.js";
import { K8S_NS, StaticPodType } from "../../../src/machinery/resources/types/k8s.js";
import { staticPodFilesController } from "../../../src/controllers/k8s/static-pod-files.js";
import { eventually, put, startRuntime } from "../runtime/harness.js";

let rt: ControllerRuntime | undefined;
let dir = "";
afterEach(async () => {
  await rt?.stop();
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
});

describe("k8s.StaticPodFilesController", () => {
  it("writes each static pod as a manifest, leaves foreign files alone and removes stale ones", async () => {
    dir = mkdtempSync(join(tmpdir(), "machined-manifests-"));
    writeFileSync(join(dir, "someone-elses.yaml"), "kind: Pod\n");
    const s = new InMemoryState();
    const owner = "k8s.ControlPlaneStaticPodController";
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "kube-apiserver", namespace: "kube-system" }, spec: { containers: [] } };
    put(s, K8S_NS, StaticPodType.type, "kube-apiserver", pod, owner);
    put(s, K8S_NS, StaticPodType.type, "kube-scheduler", { ...pod, metadata: { ...pod.metadata, name: "kube-scheduler" } }, owner);
    rt = startRuntime(s, [staticPodFilesController({ dir })]);
    const apiserver = join(dir, "talos-kube-apiserver.yaml");
    await eventually(() => existsSync(apiserver) && existsSync(join(dir, "talos-kube-scheduler.yaml")), 3000, "manifests");
    expect(parse(readFileSync(apiserver, "utf8")).metadata.name).toBe("kube-apiserver");

    s.destroy({ namespace: K8S_NS, type: StaticPodType.type, id: "kube-scheduler" }, owner);
    await eventually(() => !existsSync(join(dir, "talos-kube-scheduler.yaml")), 3000, "stale manifest removed");
    expect(existsSync(apiserver)).toBe(true);
    expect(readFileSync(join(dir, "someone-elses.yaml"), "utf8")).toBe("kind: Pod\n");
  });
});
