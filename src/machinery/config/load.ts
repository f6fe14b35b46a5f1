/**
 * Entry point for reading machine configs. See decode.ts for the document rules and schema/ for the v1alpha1 types.
 */
import { MachineConfig } from "./machineconfig.js";

/**
 * Loads a single- or multi-document machine config. Throws ConfigError (with `.path`, and `.line`/`.column` when
 * known) for malformed YAML, wrong types, unknown keys, an unknown `version`, or an empty input ("config not found").
 * A config without a v1alpha1 document loads; whether that is acceptable is the caller's decision.
 */
export function loadConfig(input: string | Uint8Array): MachineConfig {
  return MachineConfig.load(input);
}
