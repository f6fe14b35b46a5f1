/**
 * Checks of the `machine` section other than network and install (upstream Config.Validate): role and CAs, disks,
 * kubelet, disk encryption, logging, node labels/annotations/taints, features.
 */
import { parseMachineType } from "../machineconfig.js";
import { formatBytes, LIMITS } from "../limits.js";
import { isSubnetOrAddress, tryURL } from "../net.js";
import { joinPath } from "../path.js";
import { Role } from "../../role.js";
import type { MachineSection } from "../schema.js";
import { isPlainObject, type PlainObject } from "../tree.js";
import { checkAnnotationKey, checkLabelValue, checkQualifiedName, checkTaint } from "./labels.js";
import type { Report } from "./report.js";

/** kubelet settings Talos owns; extraConfig may not override them. */
const protectedKubeletFields = [
  "apiVersion", "authentication", "authorization", "cgroupRoot", "kind", "kubeletCgroups", "port",
  "protectKernelDefaults", "resolvConf", "rotateCertificates", "systemCgroups", "staticPodPath", "seccompDefault",
];

export function checkRoleAndCAs(m: MachineSection, r: Report): void {
  const t = parseMachineType(m.type);
  if (t === "unknown") {
    r.error("machine.type", `unknown machine type ${JSON.stringify(m.type)} (expected one of controlplane, worker, init)`);
    return;
  }
  if (t !== m.type) r.warn("machine.type", `use ${JSON.stringify(t)} instead of ${JSON.stringify(m.type ?? "")} for machine type`);

  const accepted = m.acceptedCAs?.length ?? 0;
  if (!m.ca && accepted === 0) r.error("machine.ca", "issuing CA or some accepted CAs are required (.machine.ca, .machine.acceptedCAs)");
  if (t === "controlplane" || t === "init") {
    if (!m.ca) return;
    if (!m.ca.key) r.error("machine.ca.key", "issuing CA key is required for controlplane nodes");
  } else {
    if (m.ca?.key) r.error("machine.ca.key", "issuing Talos API CA key is not allowed on non-controlplane nodes");
    if (m.ca && !m.ca.crt && accepted === 0) {
      r.error("machine.ca.crt", "trusted CA certificates are required on non-controlplane nodes (.machine.ca.crt, .machine.acceptedCAs)");
    }
    // cluster.ca.key on a worker is reported by the cluster checks.
  }
}

export function checkMachineMisc(m: MachineSection, raw: PlainObject, r: Report): void {
  if ((m.files?.length ?? 0) > 0) r.warn("machine.files", ".machine.files is deprecated; use dedicated configuration documents instead");
  const fileBytes = (m.files ?? []).reduce((n, f) => n + Buffer.byteLength(f.content ?? ""), 0);
  if (fileBytes > LIMITS.filesBytes) {
    r.error("machine.files", `the files hold ${formatBytes(fileBytes)} of contents; at most ${formatBytes(LIMITS.filesBytes)} in total (larger files belong on a disk)`);
  }
  if (m.baseRuntimeSpecOverrides && Object.keys(m.baseRuntimeSpecOverrides).length > 0) {
    r.warn("machine.baseRuntimeSpecOverrides", ".machine.baseRuntimeSpecOverrides is deprecated; use a CRIBaseRuntimeSpecConfig document instead");
  }

  (raw.disks as unknown[] | undefined)?.forEach((d, i) => {
    if (d === null) r.error(`machine.disks[${i}]`, "disk entry is null");
  });
  m.disks?.forEach((d, i) => {
    const parts = d.partitions ?? [];
    parts.forEach((pt, j) => {
      const full = pt.size === undefined || pt.size === "" || pt.size === "0";
      if (full && j !== parts.length - 1) {
        r.error(`machine.disks[${i}].partitions[${j}]`, `partition for disk ${JSON.stringify(d.device ?? "")} is set to occupy full disk, but it's not the last partition in the list`);
      }
    });
  });

  const k = m.kubelet;
  k?.nodeIP?.validSubnets?.forEach((s, i) => {
    if (!isSubnetOrAddress(s.replace(/^!/, ""))) r.error(`machine.kubelet.nodeIP.validSubnets[${i}]`, `kubelet nodeIP subnet is not valid: ${JSON.stringify(s)}`);
  });
  for (const f of protectedKubeletFields) {
    if (k?.extraConfig && f in k.extraConfig) r.error(`machine.kubelet.extraConfig.${f}`, `kubelet configuration field ${JSON.stringify(f)} can't be overridden`);
  }

  for (const part of ["ephemeral", "state"] as const) {
    const enc = m.systemDiskEncryption?.[part];
    if (!enc) continue;
    const p = `machine.systemDiskEncryption.${part}`;
    if ((enc.keys?.length ?? 0) === 0) r.error(`${p}.keys`, "no encryption keys provided");
    const slots = new Set<number>();
    enc.keys?.forEach((key, i) => {
      const slot = key.slot ?? 0;
      if (slots.has(slot)) r.error(`${p}.keys[${i}].slot`, `encryption key slot ${slot} is already in use`);
      slots.add(slot);
      if (!key.nodeID && !key.static && !key.kms && !key.tpm) {
        r.error(`${p}.keys[${i}]`, `encryption key at slot ${slot} doesn't have the configuration parameters`);
      }
    });
  }

  m.logging?.destinations?.forEach((d, i) => {
    const p = `machine.logging.destinations[${i}]`;
    const u = d.endpoint ? tryURL(d.endpoint) : undefined;
    if (!d.endpoint) r.error(`${p}.endpoint`, "empty logging endpoint");
    else if (!u || u.host === "") r.error(`${p}.endpoint`, `empty logging endpoint's host: ${JSON.stringify(d.endpoint)}`);
    else if (u.protocol !== "tcp:" && u.protocol !== "udp:") {
      r.error(`${p}.endpoint`, `unexpected logging endpoint scheme ${JSON.stringify(u.protocol.replace(/:$/, ""))}`);
    }
    if (d.format !== "json_lines") r.error(`${p}.format`, `unknown logging format ${JSON.stringify(d.format ?? "")}`);
  });

  checkMap(m.nodeLabels, "machine.nodeLabels", r, (key, v) => checkQualifiedName(key) ?? checkLabelValue(v));
  checkMap(m.nodeAnnotations, "machine.nodeAnnotations", r, (key) => checkAnnotationKey(key));
  checkMap(m.nodeTaints, "machine.nodeTaints", r, (key, v) => checkQualifiedName(key) ?? checkTaint(v));

  for (const section of ["mirrors", "config"] as const) {
    const reg = isPlainObject(raw.registries) ? raw.registries[section] : undefined;
    if (!isPlainObject(reg)) continue;
    for (const [name, v] of Object.entries(reg)) {
      if (v === null) r.error(`machine.registries.${section}[${JSON.stringify(name)}]`, "registry entry is null");
    }
  }
}

export function checkFeatures(m: MachineSection, isControlPlane: boolean, r: Report): void {
  const f = m.features;
  if (!f) return;
  if (f.hostDNS?.forwardKubeDNSToHost && !f.hostDNS.enabled) {
    r.error("machine.features.hostDNS", "feature hostDNS.forwardKubeDNSToHost requires hostDNS.enabled to be true");
  }
  const access = f.kubernetesTalosAPIAccess;
  if (access?.enabled) {
    if (!isControlPlane) {
      r.error("machine.features.kubernetesTalosAPIAccess", "feature Kubernetes Talos API Access can only be enabled on control plane machines");
    }
    const roles = new Set<string>(Object.values(Role));
    access.allowedRoles?.forEach((role, i) => {
      if (!roles.has(role)) r.error(`machine.features.kubernetesTalosAPIAccess.allowedRoles[${i}]`, `invalid role ${JSON.stringify(role)} in allowed roles for Kubernetes Talos API Access`);
    });
  }
  const algo = f.nodeAddressSortAlgorithm;
  if (algo && algo !== "v1" && algo !== "v2") {
    r.error("machine.features.nodeAddressSortAlgorithm", `invalid node address sort algorithm ${JSON.stringify(algo)} (expected v1 or v2)`);
  }
}

function checkMap(
  m: Record<string, string> | undefined,
  base: string,
  r: Report,
  check: (key: string, value: string) => string | undefined,
): void {
  for (const key of Object.keys(m ?? {}).sort()) {
    const bad = check(key, m![key]);
    if (bad) r.error(joinPath(base, key), bad);
  }
}
