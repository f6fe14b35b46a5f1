/**
 * secrets.TrustdController (control planes): trustd's TLS server certificate (TrustdCertificates `trustd`), issued
 * from the OS CA for the same names as the API certificate (CertSANs `api`, CN = FQDN), KeyUsage digitalSignature +
 * keyEncipherment, EKU serverAuth, 24 h, renewed at half-life or when the names or the CA change, as upstream.
 * Workers and unconfigured nodes have none.
 */
import { DEFAULT_CERT_VALIDITY_MS, issueLeaf } from "../../machinery/pki/issue.js";
import { ExtKeyUsage, KeyUsage } from "../../machinery/pki/certificate.js";
import { digest, issuedAnnotations, msUntilRenewal, reissueReason } from "../../machinery/resources/issued.js";
import { pointer, read, readSpec } from "../../machinery/resources/read.js";
import { isControlPlane, machineType, machineTypeInput } from "../../machinery/resources/types/config.js";
import { CertSANType, OSRootType, SECRET_IDS, TrustdCertsType, type TrustdCertsSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";

export interface TrustdCertsOptions {
  validityMs?: number;
}

export function trustdCertsController(opts: TrustdCertsOptions = {}): Controller {
  const ptr = pointer(TrustdCertsType, SECRET_IDS.trustd);
  const validity = opts.validityMs ?? DEFAULT_CERT_VALIDITY_MS;
  return {
    name: "secrets.TrustdController",
    inputs: [
      machineTypeInput,
      { ...pointer(OSRootType, SECRET_IDS.os), kind: "weak" },
      { ...pointer(CertSANType, SECRET_IDS.api), kind: "weak" },
    ],
    outputs: [{ type: TrustdCertsType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const root = readSpec(ctx, OSRootType, SECRET_IDS.os);
      if (!isControlPlane(machineType(ctx)) || !root?.issuingCA) {
        ctx.destroy(ptr);
        return;
      }
      const sans = readSpec(ctx, CertSANType, SECRET_IDS.api);
      if (!sans) return;
      const existing = read(ctx, TrustdCertsType, SECRET_IDS.trustd);
      const inputs = digest({ ca: root.issuingCA.crt, accepted: root.acceptedCAs, sans });
      if (reissueReason(existing, inputs) === undefined) return { requeueAfterMs: msUntilRenewal(existing) };
      const server = await issueLeaf(root.issuingCA, {
        subject: { commonName: sans.fqdn },
        keyUsage: KeyUsage.digitalSignature | KeyUsage.keyEncipherment,
        extKeyUsage: [ExtKeyUsage.ServerAuth],
        ipSANs: sans.ips,
        dnsSANs: sans.dnsNames,
        validityMs: validity,
      });
      const spec: TrustdCertsSpec = { server, acceptedCAs: root.acceptedCAs };
      ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, validity / 2) });
      return { requeueAfterMs: validity / 2 };
    },
  };
}
