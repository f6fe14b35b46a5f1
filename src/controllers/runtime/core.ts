/**
 * The core controllers (everything but networking) with their injected dependencies, in one list for
 * the wiring: `for (const c of coreControllers(opts)) runtime.register(c)`. Types to register first:
 * `registerCoreTypes(registry)` from machinery/resources/types/cluster.ts.
 */
import type { UnmetCondition } from "../../machinery/resources/types/runtime.js";
import type { Controller, ControllerStatus, ReconcileContext } from "../../state/runtime/index.js";
import { readAll } from "../../machinery/resources/read.js";
import { KubeletSecretsType } from "../../machinery/resources/types/secrets.js";
import { disksController, type DisksOptions } from "../block/disks.js";
import { mountController } from "../block/mounts.js";
import { localFolderVolumes, volumeManagerController, type VolumeInfo } from "../block/volumes.js";
import { infoController } from "../cluster/info.js";
import { discoveryControllers } from "../cluster/index.js";
import { nodeIdentityController } from "../cluster/node-identity.js";
import { etcdMemberController } from "../etcd/member.js";
import { systemInfoController } from "../hardware/system-info.js";
import { kubeletConfigController } from "../k8s/kubelet-config.js";
import { kubeletSpecController, type KubeletSpecOptions } from "../k8s/kubelet-spec.js";
import { nodenameController, type NodenameOptions } from "../k8s/nodename.js";
import { timeSyncController } from "../time/sync.js";
import { diagnosticsController } from "./diagnostics.js";
import { machineStatusController, type MachineStatusOptions } from "./machine-status.js";
import { metaKeyController, type MetaReader } from "./meta-keys.js";
import { mountStatusController } from "./mount-status.js";
import { securityStateController } from "./security-state.js";
import { inventoryControllers } from "./inventory.js";

export interface CoreControllerOptions {
  /** The state folder: node identity file, and (by default) the STATE/EPHEMERAL folder volumes. */
  stateDir: string;
  /** The lifecycle's readiness sink (MachineStatusTracker / Node conditions); must be idempotent. */
  setReadiness: (unmet: UnmetCondition[]) => void;
  /** Services readiness requires; default upstream's list (apid, machined, trustd on control planes, ...). */
  requiredServices?: MachineStatusOptions["requiredServices"];
  hasKubernetes?: MachineStatusOptions["hasKubernetes"];
  /** Local etcd member id (EtcdClient); without it no EtcdMember is published. */
  etcdMemberId?: () => Promise<bigint | number | string>;
  /** Controller runtime statuses for the "controller failing" diagnostics, e.g. `() => runtime.statuses()`. */
  runtimeStatuses?: () => ControllerStatus[];
  discoverDisks?: DisksOptions["discover"];
  /** Volume source; default: the state folder as STATE and EPHEMERAL (local mode). */
  volumes?: () => Promise<VolumeInfo[]>;
  readMeta?: MetaReader;
  /** Root for /sys and /proc reads (DMI, SELinux, FIPS); default "/". */
  hostRoot?: string;
  /** False when no kubelet runs on this node (no KubeletConfig/KubeletSpec then). Default true. */
  runsKubelet?: () => boolean;
  /** What this host needs in the KubeletConfiguration (kubelet-spec.ts). */
  kubeletHost?: KubeletSpecOptions["host"];
  /** NTP sync state; absent = the host clock is used (local mode: synced, sync disabled). */
  timeSynced?: () => boolean;
  /** Container-like mode: kubelet may not protect kernel defaults. */
  container?: boolean;
  fallbackHostname?: NodenameOptions["fallbackHostname"];
  fallbackAddresses?: () => string[];
}

export function coreControllers(opts: CoreControllerOptions): Controller[] {
  const list: Controller[] = [
    infoController(),
    nodeIdentityController({ stateDir: opts.stateDir }),
    ...discoveryControllers({ fallbackAddresses: opts.fallbackAddresses }),
    nodenameController({ fallbackHostname: opts.fallbackHostname }),
    kubeletConfigController({ runsKubelet: opts.runsKubelet }),
    kubeletSpecController({ container: opts.container, host: opts.kubeletHost }),
    disksController({ discover: opts.discoverDisks }),
    volumeManagerController({ volumes: opts.volumes ?? localFolderVolumes(opts.stateDir) }),
    mountController(),
    mountStatusController(),
    systemInfoController({ root: opts.hostRoot }),
    securityStateController({ root: opts.hostRoot }),
    metaKeyController({ read: opts.readMeta }),
    timeSyncController({ synced: opts.timeSynced }),
    diagnosticsController({ statuses: opts.runtimeStatuses }),
    machineStatusController({
      setReadiness: opts.setReadiness,
      requiredServices: opts.requiredServices,
      // A node that runs no kubelet never gets a Node to be ready; KubeletSecrets alone (upstream's test) is not enough.
      hasKubernetes: opts.hasKubernetes ?? (opts.runsKubelet ? kubeletRuns(opts.runsKubelet) : undefined),
    }),
  ];
  if (opts.etcdMemberId) list.push(etcdMemberController({ memberId: opts.etcdMemberId }));
  list.push(...inventoryControllers({ hostRoot: opts.hostRoot }));
  return list;
}

function kubeletRuns(runsKubelet: () => boolean): (ctx: Pick<ReconcileContext, "list">) => boolean {
  return (ctx) => runsKubelet() && readAll(ctx, KubeletSecretsType).length > 0;
}
