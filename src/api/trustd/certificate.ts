/**
 * What trustd does with one call, apart from gRPC: check the `token` metadata against machine.token, then sign the
 * caller's CSR with the OS CA as a server-only certificate. Upstream's rules (internal/app/trustd/internal/reg,
 * pkg/grpc/middleware/auth/basic): the token is compared as SHA-256 digests in constant time; the certificate gets
 * KeyUsage digitalSignature and EKU serverAuth only, whatever the CSR asks, and the CSR's Organization (the Talos
 * roles) is dropped, so a machine holding the token can never obtain a client certificate with a role. Validity
 * is siderolabs/crypto's default, 24 h.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError, Code } from "../../machinery/errors.js";
import { ExtKeyUsage, KeyUsage } from "../../machinery/pki/certificate.js";
import { CSRError, parseCSR, signCSR, type ParsedCSR } from "../../machinery/pki/csr.js";
import { DEFAULT_CERT_VALIDITY_MS } from "../../machinery/pki/issue.js";
import type { OSRootSpec } from "../../machinery/resources/types/secrets.js";

/**
 * Throws Unauthenticated unless the first `token` value equals `expected`. An empty machine.token admits nobody
 * (upstream would admit an empty token then; a control-plane config always carries one).
 */
export function checkToken(values: readonly (string | Buffer)[], expected: string): void {
  if (values.length === 0) throw new ApiError(Code.Unauthenticated, "missing token");
  const got = createHash("sha256").update(String(values[0])).digest();
  const want = createHash("sha256").update(expected).digest();
  if (!timingSafeEqual(got, want) || expected === "") throw new ApiError(Code.Unauthenticated, "invalid token");
}

export interface SignedCertificate {
  /** Every accepted OS CA, PEM, concatenated. */
  ca: string;
  crt: string;
  csr: ParsedCSR;
  /** The Organization values the CSR asked for and did not get. */
  strippedOrganizations: string[];
}

/** Parses and signs `csrPem` with the OS root; errors carry upstream's codes and texts. */
export async function signServerCSR(root: OSRootSpec | undefined, csrPem: Uint8Array, validityMs = DEFAULT_CERT_VALIDITY_MS): Promise<SignedCertificate> {
  if (!root?.issuingCA) throw new ApiError(Code.Unavailable, "the OS CA is not available on this node yet");
  let csr: ParsedCSR;
  try {
    csr = parseCSR(csrPem);
  } catch (e) {
    if (e instanceof CSRError) throw new ApiError(Code.InvalidArgument, e.message);
    throw e;
  }
  let crt: string;
  try {
    crt = await signCSR(root.issuingCA, csr, {
      keyUsage: KeyUsage.digitalSignature,
      extKeyUsage: [ExtKeyUsage.ServerAuth],
      validityMs,
      subject: (s) => ({ commonName: s.commonName }),
    });
  } catch (e) {
    throw new ApiError(Code.Internal, `failed to sign CSR: ${(e as Error).message}`);
  }
  return { ca: root.acceptedCAs.map((c) => (c.crt.endsWith("\n") ? c.crt : `${c.crt}\n`)).join(""), crt, csr, strippedOrganizations: csr.subject.organizations ?? [] };
}
