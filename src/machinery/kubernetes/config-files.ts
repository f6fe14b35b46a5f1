/**
 * The configuration files the control plane components read, rendered from the component configs as upstream's
 * RenderConfigsStaticPodController and RenderSecretsStaticPodController write them: the admission, audit and
 * authorization configs and the encryption config of kube-apiserver, and kube-scheduler's
 * KubeSchedulerConfiguration. YAML as Kubernetes' serializer prints it (keys sorted, two-space indent).
 */
import { stringify } from "yaml";
import { SCHEDULER_SECRETS } from "../paths.js";
import type { KubernetesRootSpec } from "../resources/types/secrets.js";
import { sortKeysDeep } from "../resources/types/k8s.js";
import type {
  AdmissionControlConfigSpec,
  AuditPolicyConfigSpec,
  AuthorizationConfigSpec,
  SchedulerConfigSpec,
} from "../resources/types/k8s-controlplane.js";
import { authorizationConfigAPIVersion, versionFromImageRef } from "./version.js";

export function kubernetesYaml(obj: unknown): string {
  return stringify(sortKeysDeep(obj), { indent: 2, indentSeq: false, lineWidth: 0 });
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function admissionControlConfigFile(spec: AdmissionControlConfigSpec): string {
  return kubernetesYaml({
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "AdmissionConfiguration",
    plugins: spec.config.map((p) => ({ name: p.name, configuration: p.configuration })),
  });
}

/** The audit policy as given (a typed audit.k8s.io Policy prints an empty `metadata`); a policy that is not one is an error. */
export function auditPolicyFile(spec: AuditPolicyConfigSpec): string {
  const policy = spec.config;
  if (policy.kind !== undefined && policy.kind !== "Policy") {
    throw new Error(`error unmarshaling audit policy configuration: kind ${JSON.stringify(policy.kind)} is not Policy`);
  }
  if (policy.rules !== undefined && !Array.isArray(policy.rules)) {
    throw new Error("error unmarshaling audit policy configuration: rules must be a list");
  }
  return kubernetesYaml({ metadata: {}, ...policy });
}

export function authorizationConfigFile(spec: AuthorizationConfigSpec): string {
  return kubernetesYaml({
    apiVersion: authorizationConfigAPIVersion(versionFromImageRef(spec.image)),
    kind: "AuthorizationConfiguration",
    authorizers: spec.config.map((a) => ({
      type: a.type,
      name: a.name,
      ...(Object.keys(a.webhook).length > 0 ? { webhook: a.webhook } : {}),
    })),
  });
}

/** The user's scheduler settings with the kind and the kubeconfig Talos writes (the user cannot move it). */
export function schedulerConfigFile(spec: SchedulerConfigSpec): string {
  const out: Record<string, unknown> = structuredClone(spec.config);
  if (out.clientConnection !== undefined && !isMap(out.clientConnection)) {
    throw new Error("error unmarshaling scheduler configuration: clientConnection must be a map");
  }
  out.apiVersion = "kubescheduler.config.k8s.io/v1";
  out.kind = "KubeSchedulerConfiguration";
  out.clientConnection = { ...((out.clientConnection as Record<string, unknown> | undefined) ?? {}), kubeconfig: `${SCHEDULER_SECRETS}/kubeconfig` };
  return kubernetesYaml(out);
}

/**
 * Secrets encrypted at rest with secretbox (key2) and/or AES-CBC (key1), whichever the cluster has, the first
 * listed being the one new writes use; identity last so data written before encryption stays readable.
 */
export function encryptionConfigFile(root: Pick<KubernetesRootSpec, "secretboxEncryptionSecret" | "aescbcEncryptionSecret">): string {
  const providers: Record<string, unknown>[] = [];
  if (root.secretboxEncryptionSecret) providers.push({ secretbox: { keys: [{ name: "key2", secret: root.secretboxEncryptionSecret }] } });
  if (root.aescbcEncryptionSecret) providers.push({ aescbc: { keys: [{ name: "key1", secret: root.aescbcEncryptionSecret }] } });
  providers.push({ identity: {} });
  return kubernetesYaml({ apiVersion: "v1", kind: "EncryptionConfig", resources: [{ resources: ["secrets"], providers }] });
}
