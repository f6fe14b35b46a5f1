/**
 * `gen config`: controlplane.yaml, worker.yaml and talosconfig from a secrets bundle, laid out as upstream
 * `talosctl gen config` does for the requested Talos version (default: the current one, v1.14).
 */
import { Document } from "yaml";
import { issueClientCert } from "../pki/issue.js";
import { generateSecrets, type SecretsBundle } from "../pki/secrets.js";
import { VersionContract } from "./contract.js";
import {
  DEFAULT_DNS_DOMAIN, DEFAULT_INSTALLER_IMAGE, DEFAULT_INSTALL_DISK, DEFAULT_KUBERNETES_VERSION, POD_CIDR_V4,
  POD_CIDR_V6, SERVICE_CIDR_V4, SERVICE_CIDR_V6,
} from "./constants.js";
import { commonDocuments, type Doc } from "./docs-common.js";
import { kubernetesControlPlaneDocuments, kubernetesNodeDocuments } from "./docs-kubernetes.js";
import type { GenInput, MachineType } from "./input.js";
import { buildTalosconfig } from "./talosconfig.js";
import { v1alpha1Document } from "./v1alpha1.js";

export { VersionContract } from "./contract.js";
export { buildTalosconfig, talosconfigDocument, type TalosconfigInput } from "./talosconfig.js";
export * from "./constants.js";

export interface GenerateConfigOptions {
  clusterName: string;
  /** Kubernetes API endpoint, an https URL such as https://10.0.0.1:6443. */
  endpoint: string;
  /** Default /dev/sda; "" leaves the install disk out. */
  installDisk?: string;
  /** Default ghcr.io/siderolabs/installer:<API tag>; "" leaves it out. */
  installImage?: string;
  additionalSans?: string[];
  /** Reused bundle (`--with-secrets`); a new one is generated for the target version when absent. */
  secrets?: SecretsBundle;
  kubernetesVersion?: string;
  /** Target Talos version for the config layout (`--talos-version`), e.g. "v1.13"; default current. */
  talosVersion?: string;
  dnsDomain?: string;
  /** talosconfig endpoints; `gen config` writes none. */
  endpoints?: string[];
  /** Roles of the talosconfig client certificate; default os:admin. */
  roles?: string[];
  /** `--with-cluster-discovery`, default true. */
  discovery?: boolean;
  /** `--with-kubespan`; left out of the config when undefined. */
  kubeSpan?: boolean;
  allowSchedulingOnControlPlanes?: boolean;
  debug?: boolean;
}

export interface GeneratedConfigs {
  controlplane: string;
  worker: string;
  talosconfig: string;
  secrets: SecretsBundle;
}

export async function generateConfigs(opts: GenerateConfigOptions): Promise<GeneratedConfigs> {
  const contract = VersionContract.parse(opts.talosVersion);
  const endpointURL = validateEndpoint(opts.endpoint);
  const secrets =
    opts.secrets ??
    (await generateSecrets({
      serviceAccountKey: contract.rsaServiceAccountKey ? "rsa" : "ecdsa",
      encryption: contract.secretboxEncryption ? "secretbox" : "aescbc",
    }));
  // upstream picks IPv6 subnets only when the endpoint itself is a bare IPv6 address
  const v6 = /^[0-9a-fA-F:]+$/.test(opts.endpoint) && opts.endpoint.includes(":");
  const inp: GenInput = {
    contract,
    clusterName: opts.clusterName,
    endpoint: opts.endpoint,
    endpointHost: endpointURL.hostname.replace(/^\[|\]$/g, ""),
    kubernetesVersion: (opts.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION).replace(/^v/, ""),
    installDisk: opts.installDisk ?? DEFAULT_INSTALL_DISK,
    installImage: opts.installImage ?? DEFAULT_INSTALLER_IMAGE,
    additionalSans: opts.additionalSans ?? [],
    dnsDomain: opts.dnsDomain || DEFAULT_DNS_DOMAIN,
    podSubnets: [v6 ? POD_CIDR_V6 : POD_CIDR_V4],
    serviceSubnets: [v6 ? SERVICE_CIDR_V6 : SERVICE_CIDR_V4],
    secrets,
    discovery: opts.discovery ?? true,
    kubeSpan: opts.kubeSpan,
    allowSchedulingOnControlPlanes: opts.allowSchedulingOnControlPlanes ?? false,
    debug: opts.debug ?? false,
  };
  const client = await issueClientCert(secrets.certs.os, { roles: opts.roles ?? ["os:admin"] });
  return {
    controlplane: encodeDocuments(machineDocuments(inp, "controlplane")),
    worker: encodeDocuments(machineDocuments(inp, "worker")),
    talosconfig: buildTalosconfig({
      contextName: opts.clusterName,
      endpoints: opts.endpoints ?? [],
      caPem: secrets.certs.os.crt,
      crtPem: client.crt,
      keyPem: client.key,
    }),
    secrets,
  };
}

/** All documents of one machine config, in upstream's order. */
export function machineDocuments(inp: GenInput, type: MachineType): Doc[] {
  return [
    v1alpha1Document(inp, type),
    ...commonDocuments(inp),
    ...kubernetesNodeDocuments(inp, type),
    ...(type === "controlplane" ? kubernetesControlPlaneDocuments(inp) : []),
  ];
}

/** Multi-document YAML with Go's layout (4-space indent, `---` between documents, no folding). */
export function encodeDocuments(docs: Doc[]): string {
  return docs.map((d) => new Document(d).toString({ indent: 4, lineWidth: 0 })).join("---\n");
}

/** The checks and hints of talosctl's validateClusterEndpoint. */
export function validateEndpoint(endpoint: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    url = undefined;
  }
  const hostPort = url && url.host ? url.host : endpoint.replace(/^[a-z]+:\/\//i, "").replace(/\/.*$/, "");
  const hint = `https://${hostPort}${/:\d+$/.test(hostPort) ? "" : ":6443"}`;
  if (!url || !/^[a-z][a-z0-9+.-]*:$/i.test(url.protocol) || !url.host) {
    const hasPort = /:\d+$/.test(hostPort);
    throw new Error(
      `${hasPort ? "no scheme specified" : "no scheme and port specified"} for the cluster endpoint URL\ntry: ${JSON.stringify(hint)}`,
    );
  }
  if (url.protocol !== "https:") {
    throw new Error(`the control plane endpoint URL should have scheme https://\ntry: ${JSON.stringify(hint)}`);
  }
  return url;
}
