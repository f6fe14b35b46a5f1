/**
 * Whether the kubelet's client certificate (/var/lib/kubelet/pki/kubelet-client-current.pem, what its TLS bootstrap
 * produced) still fits this node, as upstream's KubeletServiceController decides before each start: it must name
 * `system:node:<node name>` (when the node name is managed) and chain to one of the accepted Kubernetes CAs, within
 * its validity. One that does not is thrown away, so the kubelet bootstraps again with the bootstrap token (a node
 * renamed, or re-joined to a cluster with another CA, would otherwise keep presenting a certificate nobody accepts).
 */
import { X509Certificate } from "node:crypto";
import { chainProblem } from "../pki/verify.js";

const CERT_RE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Why the client certificate in `pem` must be replaced, or undefined when it is good. */
export function kubeletClientCertProblem(pem: string, expectedNodename: string, acceptedCAsPem: string, at: Date = new Date()): string | undefined {
  const first = pem.match(CERT_RE)?.[0];
  if (!first) return "no certificate in the file";
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(first);
  } catch (err) {
    return `the certificate cannot be parsed: ${(err as Error).message}`;
  }
  if (expectedNodename) {
    const cn = /(?:^|\n)CN=([^\n]+)/.exec(cert.subject)?.[1] ?? "";
    const want = `system:node:${expectedNodename}`;
    if (cn !== want) return `it is issued for ${JSON.stringify(cn)}, the node is ${JSON.stringify(want)}`;
  }
  const problems: string[] = [];
  for (const caPem of acceptedCAsPem.match(CERT_RE) ?? []) {
    let problem: string | undefined;
    try {
      problem = chainProblem(cert, caPem, at);
    } catch (err) {
      problem = `accepted CA cannot be parsed: ${(err as Error).message}`;
    }
    if (!problem) return undefined;
    problems.push(problem);
  }
  return problems.length ? `it does not match any accepted CA: ${problems.join("; ")}` : "there is no accepted CA to check it against";
}
