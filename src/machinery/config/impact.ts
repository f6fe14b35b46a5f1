/**
 * What a config change means for a running node: which YAML paths changed, which of them the node applies live and
 * which only take effect after a reboot. Used by ApplyConfiguration to tell the operator.
 *
 * Classification table (longest matching prefix wins; anything not listed is live):
 *
 * | path prefix                                   | effect  | why                                                        |
 * |-----------------------------------------------|---------|------------------------------------------------------------|
 * | machine.type                                  | refused | a node cannot change role in place (ConfigError)           |
 * | machine.install                               | reboot  | used by the installer: next install/upgrade, kernel args at boot |
 * | machine.kernel                                | reboot  | kernel modules and their parameters are loaded at boot     |
 * | machine.disks                                 | reboot  | extra disks are partitioned and mounted during boot        |
 * | machine.systemDiskEncryption                  | reboot  | system volumes are encrypted when they are provisioned     |
 * | machine.features.diskQuotaSupport             | reboot  | a mount option of the EPHEMERAL volume                     |
 * | machine.time.bootTimeout                      | reboot  | only read during boot                                      |
 * | VolumeConfig, UnattendedInstallConfig docs    | reboot  | system volume layout / installation                        |
 * | machine.network.*, machine.certSANs           | live    | network controllers reconcile; certificates are reissued   |
 * | machine.time, machine.logging, machine.sysctls, machine.sysfs, machine.files, machine.env, machine.registries, machine.udev | live | applied by their controllers (env: services restart) |
 * | machine.kubelet.*, machine.nodeLabels/Annotations/Taints | live | kubelet is restarted with the new settings          |
 * | machine.ca, machine.token, machine.acceptedCAs | live    | apid/trustd reload their certificates                      |
 * | cluster.*                                     | live    | control-plane components (apiserver, controller-manager, scheduler, proxy, etcd args, manifests) are re-rendered and restarted |
 * | other documents (by kind)                     | live    |                                                            |
 */
import { isV1Alpha1, type ConfigDocument } from "./document.js";
import { ConfigError } from "./errors.js";
import type { MachineConfig } from "./machineconfig.js";
import { formatPath, type PathSegment } from "./path.js";
import { deepEqual, isPlainObject } from "./tree.js";

export interface ChangeImpact {
  /** Every changed path (v1alpha1 paths like `machine.network.hostname`, other documents as `Kind` or `Kind/name`). */
  changed: string[];
  /** The changed paths that only take effect after a reboot. */
  rebootRequired: string[];
  /** The changed paths a running node applies without a reboot. */
  live: string[];
}

const REBOOT_PREFIXES = [
  "machine.install",
  "machine.kernel",
  "machine.disks",
  "machine.systemDiskEncryption",
  "machine.features.diskQuotaSupport",
  "machine.time.bootTimeout",
];

const REBOOT_KINDS = new Set(["VolumeConfig", "UnattendedInstallConfig"]);

function underPrefix(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
}

/** Paths where two trees differ: map keys recurse; lists of equal length compare item by item. */
function changedPaths(a: unknown, b: unknown, path: PathSegment[], out: string[]): void {
  if (deepEqual(a, b)) return;
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) changedPaths(a[k], b[k], [...path, k], out);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((x, i) => changedPaths(x, b[i], [...path, i], out));
    return;
  }
  out.push(formatPath(path));
}

function docLabel(d: ConfigDocument): string {
  return d.name ? `${d.kind}/${d.name}` : d.kind;
}

/**
 * Classifies the changes from `oldCfg` to `newCfg`. Throws ConfigError when the machine type changes (controlplane
 * and init count as the same role; a node without a previous v1alpha1 document may take any type).
 */
export function changeImpact(oldCfg: MachineConfig, newCfg: MachineConfig): ChangeImpact {
  const oldType = oldCfg.machineType();
  const newType = newCfg.machineType();
  const role = (t: string) => (t === "init" ? "controlplane" : t);
  if (oldCfg.v1alpha1() && oldType !== "unknown" && role(oldType) !== role(newType)) {
    throw new ConfigError(
      `machine.type: the machine type can't be changed from ${JSON.stringify(oldType)} to ${JSON.stringify(newType)} on a running node`,
      "machine.type",
    );
  }

  const changed: string[] = [];
  changedPaths(oldCfg.v1alpha1() ?? {}, newCfg.v1alpha1() ?? {}, [], changed);

  const rebootDocs = new Set<string>();
  const others = (c: MachineConfig) => new Map(c.documents.filter((d) => !isV1Alpha1(d)).map((d) => [docLabel(d), d]));
  const before = others(oldCfg);
  const after = others(newCfg);
  for (const label of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(label);
    const b = after.get(label);
    if (deepEqual(a?.data, b?.data)) continue;
    changed.push(label);
    if (REBOOT_KINDS.has((a ?? b)!.kind)) rebootDocs.add(label);
  }

  const needsReboot = (p: string) => rebootDocs.has(p) || REBOOT_PREFIXES.some((prefix) => underPrefix(p, prefix));
  return {
    changed,
    rebootRequired: changed.filter(needsReboot),
    live: changed.filter((p) => !needsReboot(p)),
  };
}
