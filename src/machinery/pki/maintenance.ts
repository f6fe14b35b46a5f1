/**
 * Maintenance mode TLS: a per-boot self-signed Ed25519 CA without Organization, and a server leaf with
 * CN maintenance-service.talos.dev. Clients connect with --insecure (optionally pinning the leaf SPKI), so nothing
 * verifies this chain; the CA is kept for the whole boot and only the leaf is renewed.
 */
import { newSelfSignedCA, type CertAndKey } from "./ca.js";
import { issueServerCert, DEFAULT_CERT_VALIDITY_MS } from "./issue.js";

export const MAINTENANCE_COMMON_NAME = "maintenance-service.talos.dev";

export function newMaintenanceCA(): Promise<CertAndKey> {
  return newSelfSignedCA({ subject: {}, algorithm: "ed25519" });
}

export interface MaintenanceCertOptions {
  ipSANs?: string[];
  dnsSANs?: string[];
  /** Reuse the boot's maintenance CA; a new one is made when absent. */
  ca?: CertAndKey;
  validityMs?: number;
}

export async function selfSignedMaintenanceCert(
  opts: MaintenanceCertOptions = {},
): Promise<{ ca: CertAndKey; cert: CertAndKey }> {
  const ca = opts.ca ?? (await newMaintenanceCA());
  const cert = await issueServerCert(ca, {
    commonName: MAINTENANCE_COMMON_NAME,
    ipSANs: opts.ipSANs ?? ["127.0.0.1", "::1"],
    dnsSANs: opts.dnsSANs ?? [],
    validityMs: opts.validityMs ?? DEFAULT_CERT_VALIDITY_MS,
  });
  return { ca, cert };
}
