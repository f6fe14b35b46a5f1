/** Normalised `gen config` input shared by the document builders. */
import type { SecretsBundle } from "../pki/secrets.js";
import type { VersionContract } from "./contract.js";

export type MachineType = "controlplane" | "worker";

export interface GenInput {
  contract: VersionContract;
  clusterName: string;
  /** Control plane endpoint exactly as given (an https URL). */
  endpoint: string;
  endpointHost: string;
  kubernetesVersion: string;
  /** Empty string: not set (the install section / UnattendedInstallConfig is then left out, as upstream). */
  installDisk: string;
  installImage: string;
  additionalSans: string[];
  dnsDomain: string;
  podSubnets: string[];
  serviceSubnets: string[];
  secrets: SecretsBundle;
  discovery: boolean;
  kubeSpan?: boolean;
  allowSchedulingOnControlPlanes: boolean;
  debug: boolean;
}

/** Builds an object keeping only defined values, in insertion order (Go's omitempty on pointers/slices). */
export function compact(entries: [string, unknown][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) if (v !== undefined) out[k] = v;
  return out;
}

export const image = (repo: string, k8sVersion: string) => `${repo}:v${k8sVersion}`;
