/** Shared setup for the core controller tests: the real store and runtime, config publishing, decoding. */
import { afterEach } from "vitest";
import { loadConfig } from "../../../src/machinery/config/index.js";
import { newResource, type Resource } from "../../../src/machinery/resources/resource.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType } from "../../../src/machinery/resources/types/config.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { ControllerRuntime, type Controller } from "../../../src/state/runtime/index.js";

export { eventually, settle, sleep } from "../../state/helpers.js";

const runtimes: ControllerRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.stop()));
});

/** Starts a runtime over `state` with `controllers`; stopped automatically after the test. */
export function startRuntime(state: InMemoryState, controllers: Controller[], backoffMs = 5): ControllerRuntime {
  const rt = new ControllerRuntime(state, { backoff: { initialMs: backoffMs, maxMs: backoffMs * 4 } });
  for (const c of controllers) rt.register(c);
  rt.start();
  runtimes.push(rt);
  return rt;
}

/** Publishes the active config and machine type as the lifecycle does. */
export function publishConfig(state: InMemoryState, text: string): void {
  const cfg = loadConfig(text);
  state.apply(newResource({ namespace: CONFIG_NS, type: MachineConfigType.type, id: "v1alpha1" }, cfg), "");
  state.apply(
    newResource({ namespace: CONFIG_NS, type: MachineTypeType.type, id: "machine-type" }, cfg.machineType()),
    "config.MachineTypeController",
  );
}

/** Writes a resource as `owner` (default: outside any controller). */
export function put(state: InMemoryState, namespace: string, type: string, id: string, spec: unknown, owner = ""): Resource {
  return state.apply(newResource({ namespace, type, id }, spec), owner);
}

export function spec<T>(state: InMemoryState, namespace: string, type: string, id: string): T | undefined {
  return state.get({ namespace, type, id })?.spec as T | undefined;
}

const B64 = "Zm9vYmFy";

/** A small control plane config; `extra` is spliced into the machine section. */
export function controlPlaneConfig(opts: { type?: string; machineExtra?: string; clusterExtra?: string; etcdCA?: boolean } = {}): string {
  return `version: v1alpha1
machine:
  type: ${opts.type ?? "controlplane"}
  network:
    hostname: Node_1.Example
${opts.machineExtra ?? ""}
cluster:
  id: cluster-id-1
  secret: cluster-secret
  clusterName: demo
  controlPlane:
    endpoint: https://10.5.0.2:6443
  network:
    dnsDomain: cluster.local
    podSubnets: [10.244.0.0/16]
    serviceSubnets: [10.96.0.0/12]
${opts.etcdCA === false ? "" : `  etcd:\n    ca:\n      crt: ${B64}\n      key: ${B64}\n`}${opts.clusterExtra ?? ""}`;
}
