/**
 * Roles and the per-method authorisation table of the Talos API (reference §1.5–1.6).
 * A method missing from the table is admin-only, exactly as upstream.
 */
export const Role = {
  Admin: "os:admin",
  Operator: "os:operator",
  Reader: "os:reader",
  EtcdBackup: "os:etcd:backup",
  ImageVerifier: "os:image:verifier",
  MetaWriter: "os:meta:writer",
  Impersonator: "os:impersonator",
} as const;

export type RoleName = (typeof Role)[keyof typeof Role] | string;

const A = Role.Admin;
const O = Role.Operator;
const R = Role.Reader;
const E = Role.EtcdBackup;
const I = Role.ImageVerifier;
const M = Role.MetaWriter;

const machine = (names: string[], roles: string[]): [string, string[]][] =>
  names.map((n) => [`/machine.MachineService/${n}`, roles]);

/** Method full path → roles allowed. Readers reaching ApplyConfiguration are re-checked by the handler. */
export const rules: ReadonlyMap<string, readonly string[]> = new Map<string, string[]>([
  ["/machine.MachineService/ApplyConfiguration", [A, R]],
  ["/machine.MachineService/Bootstrap", [A]],
  ...machine(
    [
      "CPUInfo", "CPUFreqStats", "Containers", "DiskStats", "DiskUsage", "Dmesg", "Events", "Hostname", "ImageList",
      "List", "LoadAvg", "Logs", "LogsContainers", "Memory", "Mounts", "NetworkDeviceStats", "Netstat", "Processes",
      "ServiceList", "Stats", "SystemStat", "Version",
    ],
    [A, O, R],
  ),
  ...machine(
    [
      "Copy", "Read", "Kubeconfig", "Reset", "Rollback", "Upgrade", "GenerateClientConfiguration",
      "EtcdForfeitLeadership", "EtcdLeaveCluster", "EtcdRecover", "EtcdRemoveMemberByID", "EtcdDowngradeCancel",
      "EtcdDowngradeEnable", "EtcdDowngradeValidate",
    ],
    [A],
  ),
  ...machine(["EtcdAlarmList", "EtcdMemberList", "EtcdStatus"], [A, O, R, E]),
  ...machine(["EtcdSnapshot"], [A, O, E]),
  ...machine(["EtcdAlarmDisarm", "EtcdDefragment"], [A, O]),
  ...machine(
    ["ImagePull", "PacketCapture", "Reboot", "Restart", "ServiceRestart", "ServiceStart", "ServiceStop", "Shutdown"],
    [A, O],
  ),
  ...machine(["MetaWrite", "MetaDelete"], [A, M]),
  ["/machine.ImageService/List", [A, O, R]],
  ["/machine.ImageService/Pull", [A, O]],
  ["/machine.ImageService/Import", [A]],
  ["/machine.ImageService/Remove", [A]],
  ["/machine.ImageService/Verify", [A, O, R, I]],
  ["/machine.LifecycleService/Install", [A]],
  ["/machine.LifecycleService/Upgrade", [A]],
  ["/storage.StorageService/Disks", [A, O, R]],
  ["/storage.StorageService/BlockDeviceWipe", [A, R]],
  ["/cluster.ClusterService/HealthCheck", [A, O, R]],
  ["/inspect.InspectService/ControllerRuntimeDependencies", [A, O, R]],
  ["/time.TimeService/Time", [A, O, R]],
  ["/time.TimeService/TimeCheck", [A, O, R]],
  ["/cosi.resource.State/Get", [A, O, R]],
  ["/cosi.resource.State/List", [A, O, R]],
  ["/cosi.resource.State/Watch", [A, O, R]],
]);

/** Roles parsed from a certificate's Organization values: trimmed, empties dropped, unknown values kept. */
export function parseRoles(organizations: string | string[] | undefined): Set<string> {
  const list = organizations === undefined ? [] : Array.isArray(organizations) ? organizations : [organizations];
  return new Set(list.map((o) => o.trim()).filter((o) => o !== ""));
}

export function isAllowed(method: string, roles: ReadonlySet<string>): boolean {
  const allowed = rules.get(method) ?? [Role.Admin];
  return allowed.some((r) => roles.has(r));
}
