/**
 * Node posture resources of the `runtime` namespace: SecurityState (`securitystate`) and Diagnostics
 * (warnings the health check's "no diagnostics" step waits on). talos-resource-api.md §3.1 rows 30, 32.
 */
import { DiagnosticSpecSchema, SecurityStateSpecSchema } from "../../api/gen/resource/definitions/runtime/runtime_pb.js";
import { specToProto } from "../protoenc.js";
import type { ResourceType } from "../resource.js";
import { specToYaml } from "../yaml.js";
import { omitEmpty } from "./k8s.js";

export type SELinuxStateName = "disabled" | "enabled, permissive" | "enabled, enforcing";
export type FIPSStateName = "disabled" | "enabled" | "enabled, strict";

export interface SecurityStateSpec {
  secureBoot: boolean;
  ukiSigningKeyFingerprint: string;
  pcrSigningKeyFingerprint: string;
  selinuxState: SELinuxStateName;
  fipsState: FIPSStateName;
  bootedWithUKI: boolean;
  moduleSignatureEnforced: boolean;
}

/** The enumer texts contain ", ", which the generic enum matcher cannot map. */
const ENUMS = {
  "talos.resource.definitions.enums.RuntimeSELinuxState": { disabled: 0, "enabled, permissive": 1, "enabled, enforcing": 2 },
  "talos.resource.definitions.enums.RuntimeFIPSState": { disabled: 0, enabled: 1, "enabled, strict": 2 },
};

export const SecurityStateType: ResourceType<SecurityStateSpec> = {
  type: "SecurityStates.talos.dev",
  defaultNamespace: "runtime",
  printColumns: [
    { name: "SecureBoot", jsonPath: "{.secureBoot}" },
    { name: "UKISigningKeyFingerprint", jsonPath: "{.ukiSigningKeyFingerprint}" },
    { name: "PCRSigningKeyFingerprint", jsonPath: "{.pcrSigningKeyFingerprint}" },
    { name: "SELinuxState", jsonPath: "{.selinuxState}" },
    { name: "ModuleSignatureEnforced", jsonPath: "{.moduleSignatureEnforced}" },
  ],
  // Go struct order; everything but secureBoot is omitempty (the zero enum value is "disabled").
  toYaml: (s) => {
    const doc: Record<string, unknown> = {
      secureBoot: s.secureBoot,
      ukiSigningKeyFingerprint: s.ukiSigningKeyFingerprint,
      pcrSigningKeyFingerprint: s.pcrSigningKeyFingerprint,
      selinuxState: s.selinuxState === "disabled" ? undefined : s.selinuxState,
      fipsState: s.fipsState === "disabled" ? undefined : s.fipsState,
      bootedWithUKI: s.bootedWithUKI,
      moduleSignatureEnforced: s.moduleSignatureEnforced,
    };
    return specToYaml(omitEmpty(doc, Object.keys(doc).filter((k) => k !== "secureBoot")));
  },
  toProto: (s) => specToProto(SecurityStateSpecSchema, s, { enums: ENUMS }),
};

export interface DiagnosticSpec {
  /** Short description of the problem. */
  message: string;
  details: string[];
}

export const DiagnosticType: ResourceType<DiagnosticSpec> = {
  type: "Diagnostics.runtime.talos.dev",
  defaultNamespace: "runtime",
  printColumns: [{ name: "Message", jsonPath: "{.message}" }],
  toProto: (s) => specToProto(DiagnosticSpecSchema, s),
};

export const SECURITY_TYPES: ResourceType[] = [SecurityStateType, DiagnosticType] as ResourceType[];
