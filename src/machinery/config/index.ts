/**
 * Public surface of the machine config model. See README.md in this folder.
 */
export { loadConfig } from "./load.js";
export { MachineConfig, parseMachineType, type MachineType } from "./machineconfig.js";
export { documentId, isV1Alpha1, V1ALPHA1, type ConfigDocument } from "./document.js";
export { ConfigError, ConfigValidationError, type ConfigIssue } from "./errors.js";
export { KNOWN_KINDS } from "./kinds.js";
export {
  v1alpha1Schema,
  type CertAndKey,
  type ClusterSection,
  type InstallSection,
  type KubeletSection,
  type MachineSection,
  type NetworkDevice,
  type NetworkSection,
  type V1Alpha1Config,
  type Vlan,
} from "./schema.js";
export { validateConfig, type ValidateOptions, type ValidationMode } from "./validate.js";
export { applyPatches, loadPatches, parsePatch, patchConfig, resolvePatchArg, type Patch } from "./patch/index.js";
export { diffConfigs } from "./diff.js";
export { changeImpact, type ChangeImpact } from "./impact.js";
export { formatPath, type PathSegment } from "./path.js";
