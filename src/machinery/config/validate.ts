/**
 * Semantic validation of a loaded config, after upstream's v1alpha1 Config.Validate. Loading already checked types
 * and unknown keys; this checks meaning (roles, CIDRs, endpoints, install disk ...) and admission (admission.ts:
 * everything the node's API identity is built from). Every problem names its YAML path, and all problems are
 * reported together.
 */
import { checkAdmission } from "./admission.js";
import { isV1Alpha1 } from "./document.js";
import { ConfigValidationError } from "./errors.js";
import type { MachineConfig } from "./machineconfig.js";
import { isPlainObject } from "./tree.js";
import { checkCluster, checkCNI } from "./validate/cluster.js";
import { checkInstall } from "./validate/install.js";
import { checkFeatures, checkMachineMisc, checkRoleAndCAs } from "./validate/machine.js";
import { checkNetwork } from "./validate/network.js";
import { Report, type ValidateOptions } from "./validate/report.js";

export type { ValidateOptions, ValidationMode } from "./validate/report.js";

/**
 * Validates `cfg` for a node running in `opts.mode`. Returns warnings; throws ConfigValidationError listing every
 * problem (one per line). A config without a v1alpha1 document has nothing to check here (the API decides whether
 * such a config is acceptable).
 */
export function validateConfig(cfg: MachineConfig, opts: ValidateOptions): { warnings: string[] } {
  const r = new Report();
  const typed = cfg.v1alpha1();
  const raw = cfg.documents.find(isV1Alpha1)?.data;
  if (!typed || !raw) return { warnings: [] };

  if (!isPlainObject(raw.machine)) {
    r.error("machine", "machine instructions are required");
    return finish(r, opts);
  }
  const m = typed.machine;
  const c = typed.cluster;
  const type = cfg.machineType();
  const isControlPlane = type === "controlplane" || type === "init";

  checkRoleAndCAs(m, r);
  const role = isControlPlane ? "controlplane" : type === "worker" ? "worker" : "unknown";
  if (!isPlainObject(raw.cluster)) r.error("cluster", "cluster instructions are required");
  else checkCluster(c, role, r);

  if (isControlPlane) checkCNI(c, r);
  checkInstall(m.install, opts.mode, cfg.documentsOfKind("UnattendedInstallConfig").length > 0, r);
  if (m.network) checkNetwork(m.network, type === "worker", r);
  checkMachineMisc(m, raw.machine, r);
  checkFeatures(m, isControlPlane, r);
  if (typed.persist === false) r.error("persist", ".persist should be enabled");
  // What the node needs to build its API identity (CA, key, SANs): a config that passes cannot lock the node out.
  checkAdmission(cfg, r, { now: opts.now });

  return finish(r, opts);
}

function finish(r: Report, opts: ValidateOptions): { warnings: string[] } {
  const errors = opts.strict ? [...r.errors, ...r.warnings.map((w) => `warning: ${w}`)] : r.errors;
  if (errors.length > 0) throw new ConfigValidationError(errors);
  return { warnings: opts.strict ? [] : r.warnings };
}
