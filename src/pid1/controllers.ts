/**
 * The controller runtime with every controller this build runs. In local mode the network is only
 * observed; PID 1 (or a network namespace handed to us) manages it.
 */
import type { Logger } from "pino";
import { ControllerRuntime } from "../state/runtime/index.js";
import type { State } from "../state/types.js";
import { networkControllers } from "../controllers/network/index.js";
import { coreControllers } from "../controllers/runtime/core.js";
import { discoverDisks } from "../host/disks.js";
import { staticPodFilesController } from "../controllers/k8s/static-pod-files.js";
import type { UnmetCondition } from "../machinery/resources/types/runtime.js";

export interface ControllerWiring {
  state: State;
  log: Logger;
  stateDir: string;
  setReadiness(unmet: UnmetCondition[]): void;
  /** Manage the network: only for PID 1 or a named network namespace. */
  network: { manage: false } | { manage: true; pid1?: boolean; netns?: string; etcRoot?: string };
  /** Disk-image files offered as install targets (local mode). */
  diskFiles?: () => string[];
  /** The kubelet's static pod folder the control plane manifests are written into. */
  manifestsDir?: string;
  /** The local etcd member id, when this node runs etcd. */
  etcdMemberId?: () => Promise<bigint>;
}

export function startControllers(w: ControllerWiring): ControllerRuntime {
  const runtime = new ControllerRuntime(w.state, {
    logger: (controller, msg, fields) => w.log.debug({ controller, ...fields }, msg),
  });
  const all = [
    ...networkControllers(w.network),
    ...coreControllers({
      stateDir: w.stateDir,
      setReadiness: w.setReadiness,
      // machined (the API included) is the one service every node must run; the lifecycle's services
      // condition covers containerd/etcd when they are supervised.
      requiredServices: () => ["machined"],
      runtimeStatuses: () => runtime.statuses(),
      discoverDisks: () => discoverDisks({ files: w.diskFiles?.() ?? [] }),
      runsKubelet: () => false,
      etcdMemberId: w.etcdMemberId,
    }),
  ];
  if (w.manifestsDir) all.push(staticPodFilesController({ dir: w.manifestsDir }));
  for (const c of all) runtime.register(c);
  runtime.start();
  return runtime;
}
