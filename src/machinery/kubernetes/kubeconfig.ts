/**
 * Kubeconfigs with a freshly issued client certificate, as upstream's pkg/kubeconfig Generate writes them: one
 * cluster (`<cluster>`, the server and every accepted CA), one user `<user>@<cluster>` with the certificate and key,
 * one context `<context>@<cluster>` in namespace `default`, made current. The text is laid out like client-go's
 * clientcmd.Write (keys sorted, `preferences: {}`), so tools that diff kubeconfigs see what they expect.
 */
import { stringify } from "yaml";
import type { CertAndKey } from "../pki/ca.js";
import { issueKubernetesAdminCert } from "../pki/issue.js";

export interface KubeconfigInput {
  clusterName: string;
  issuingCA: CertAndKey;
  /** PEM certificates the client trusts for the server, concatenated in this order. */
  acceptedCAs: string[];
  lifetimeMs: number;
  commonName: string;
  organization: string;
  endpoint: string;
  username: string;
  contextName: string;
}

export async function generateKubeconfig(input: KubeconfigInput): Promise<string> {
  const cert = await issueKubernetesAdminCert(input.issuingCA, {
    commonName: input.commonName,
    organization: input.organization,
    validityMs: input.lifetimeMs,
  });
  return renderKubeconfig(input, cert);
}

/** The kubeconfig text for an already issued client certificate. */
export function renderKubeconfig(input: Omit<KubeconfigInput, "issuingCA" | "lifetimeMs" | "commonName" | "organization">, cert: CertAndKey): string {
  const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
  const user = `${input.username}@${input.clusterName}`;
  const context = `${input.contextName}@${input.clusterName}`;
  return stringify(
    {
      apiVersion: "v1",
      clusters: [{ cluster: { "certificate-authority-data": b64(input.acceptedCAs.join("")), server: input.endpoint }, name: input.clusterName }],
      contexts: [{ context: { cluster: input.clusterName, namespace: "default", user }, name: context }],
      "current-context": context,
      kind: "Config",
      preferences: {},
      users: [{ name: user, user: { "client-certificate-data": b64(cert.crt), "client-key-data": b64(cert.key) } }],
    },
    { indent: 2, indentSeq: false, lineWidth: 0 },
  );
}

/** The admin kubeconfig certificates' default lifetime (cluster.adminKubeconfig.certLifetime unset): one year. */
export const ADMIN_CERT_DEFAULT_LIFETIME_MS = 365 * 24 * 3_600_000;

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A Go time.Duration from the config (text such as `8760h0m0s`, or a number of nanoseconds) in milliseconds;
 * 0 for an unset value, an error naming the field for anything else.
 */
export function goDurationMs(v: string | number | undefined, field: string): number {
  if (v === undefined || v === "" || v === 0) return 0;
  if (typeof v === "number") return v / 1e6;
  const s = v.trim();
  const sign = s.startsWith("-") ? -1 : 1;
  const body = s.replace(/^[+-]/, "");
  if (body === "0") return 0;
  let total = 0;
  let consumed = 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  for (let m = re.exec(body); m; m = re.exec(body)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== body.length) throw new Error(`${field}: invalid duration ${JSON.stringify(v)}`);
  return sign * total;
}
