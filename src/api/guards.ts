/** Preconditions shared by handlers, with upstream's exact error texts. */
import { unimplemented } from "../machinery/errors.js";
import type { ApiDeps } from "./deps.js";

/** Bootstrap, Kubeconfig, the etcd APIs, ...: only on a control plane, and only once the type is known. */
export function requireControlPlane(deps: ApiDeps, apiName: string): void {
  const cfg = deps.node.activeConfig;
  if (!cfg) throw unimplemented(`machine type is not set, cannot use ${apiName} API`);
  const t = cfg.machineType();
  if (t !== "controlplane" && t !== "init") throw unimplemented(`${apiName} is only available on control plane nodes`);
}
