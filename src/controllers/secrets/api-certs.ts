/**
 * secrets.APIController (control planes): the Talos API server certificate for the CertSANs `api` names (CN = FQDN,
 * EKU serverAuth) and the node's own client certificate (CN = FQDN, O = os:impersonator, EKU clientAuth, used to
 * forward requests to other nodes), both from the OS CA and valid 24 h, renewed at half-life or when the names or
 * the CA change (ApiCertificates `api`). Workers have no CA key: their certificate comes from trustd.
 */
import { DEFAULT_CERT_VALIDITY_MS, issueClientCert, issueServerCert } from "../../machinery/pki/issue.js";
import { Role } from "../../machinery/role.js";
import { pointer, read, readSpec } from "../../machinery/resources/read.js";
import { APICertsType, CertSANType, OSRootType, SECRET_IDS, type APICertsSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { digest, issuedAnnotations, msUntilRenewal, reissueReason } from "../../machinery/resources/issued.js";

export interface APICertsOptions {
  validityMs?: number;
}

export function apiCertsController(opts: APICertsOptions = {}): Controller {
  const ptr = pointer(APICertsType, SECRET_IDS.api);
  const validity = opts.validityMs ?? DEFAULT_CERT_VALIDITY_MS;
  return {
    name: "secrets.APIController",
    inputs: [
      { ...pointer(OSRootType, SECRET_IDS.os), kind: "weak" },
      { ...pointer(CertSANType, SECRET_IDS.api), kind: "weak" },
    ],
    outputs: [{ type: APICertsType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const root = readSpec(ctx, OSRootType, SECRET_IDS.os);
      const sans = readSpec(ctx, CertSANType, SECRET_IDS.api);
      if (!root?.issuingCA) {
        // Maintenance mode, or a worker (its certificate arrives from trustd, which this controller does not own).
        if (read(ctx, APICertsType, SECRET_IDS.api)?.metadata.owner === ctx.owner) ctx.destroy(ptr);
        return;
      }
      if (!sans) return;
      const existing = read(ctx, APICertsType, SECRET_IDS.api);
      const inputs = digest({ ca: root.issuingCA.crt, accepted: root.acceptedCAs, sans });
      if (reissueReason(existing, inputs) === undefined) return { requeueAfterMs: msUntilRenewal(existing) };
      const [server, client] = await Promise.all([
        issueServerCert(root.issuingCA, { commonName: sans.fqdn, ipSANs: sans.ips, dnsSANs: sans.dnsNames, validityMs: validity }),
        issueClientCert(root.issuingCA, { roles: [Role.Impersonator], commonName: sans.fqdn, validityMs: validity }),
      ]);
      const spec: APICertsSpec = { server, client, acceptedCAs: root.acceptedCAs, skipVerifyingClientCert: false };
      ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, validity / 2) });
      return { requeueAfterMs: validity / 2 };
    },
  };
}
