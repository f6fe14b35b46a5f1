/**
 * secrets.KubernetesDynamicCertsController (control planes): KubernetesDynamicCerts `k8s-dynamic-certs`, the
 * certificates that depend on the node's names — the API server's serving certificate (CN kube-apiserver,
 * O kube-master, the CertSANs `k8s` names), its client certificate for kubelets (CN apiserver-kubelet-client,
 * O system:masters), both from cluster.ca, and the front proxy client (CN front-proxy-client) from the aggregator
 * CA. Like upstream it starts only once the network has been ready (addresses and hostname settle first) and waits
 * for a synced clock. Valid one year; issued again when the CAs or the names change, and at half-life.
 */
import { ExtKeyUsage, KeyUsage } from "../../machinery/pki/certificate.js";
import { issueLeaf } from "../../machinery/pki/issue.js";
import { digest, issuedAnnotations, msUntilRenewal, reissueReason, requeueAfter } from "../../machinery/resources/issued.js";
import { pointer, read, readSpec } from "../../machinery/resources/read.js";
import { NETWORK_STATUS_ID, NetworkStatusType } from "../../machinery/resources/types/network.js";
import {
  CertSANType,
  KubernetesDynamicCertsType,
  KubernetesRootType,
  SECRET_IDS,
  type KubernetesDynamicCertsSpec,
} from "../../machinery/resources/types/secrets.js";
import { TimeStatusType } from "../../machinery/resources/types/time.js";
import type { Controller } from "../../state/runtime/index.js";

/** KubernetesDefaultCertificateValidityDuration: one year. */
export const KUBERNETES_CERT_VALIDITY_MS = 365 * 24 * 3_600_000;
const SERVING_KEY_USAGE = KeyUsage.digitalSignature | KeyUsage.keyEncipherment;

export interface KubernetesCertsOptions {
  validityMs?: number;
}

export function kubernetesDynamicCertsController(opts: KubernetesCertsOptions = {}): Controller {
  const ptr = pointer(KubernetesDynamicCertsType, SECRET_IDS.k8sDynamicCerts);
  const validity = opts.validityMs ?? KUBERNETES_CERT_VALIDITY_MS;
  let networkWasReady = false;
  return {
    name: "secrets.KubernetesDynamicCertsController",
    inputs: [
      { ...pointer(NetworkStatusType, NETWORK_STATUS_ID), kind: "weak" },
      { ...pointer(KubernetesRootType, SECRET_IDS.k8s), kind: "weak" },
      { ...pointer(TimeStatusType, "node"), kind: "weak" },
      { ...pointer(CertSANType, SECRET_IDS.k8s), kind: "weak" },
    ],
    outputs: [{ type: KubernetesDynamicCertsType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      if (!networkWasReady) {
        const net = readSpec(ctx, NetworkStatusType, NETWORK_STATUS_ID);
        // The addresses and hostname may still change until the network is first ready.
        if (!net?.addressReady || !net.hostnameReady) return;
        networkWasReady = true;
      }
      const root = readSpec(ctx, KubernetesRootType, SECRET_IDS.k8s);
      if (!root) {
        ctx.destroy(ptr);
        return;
      }
      if (!readSpec(ctx, TimeStatusType, "node")?.synced) return; // Certificates carry the current time.
      const sans = readSpec(ctx, CertSANType, SECRET_IDS.k8s);
      if (!sans) return;
      if (!root.issuingCA) throw new Error("failed to parse CA certificate: cluster.ca has no key on this node");
      if (!root.aggregatorCA) throw new Error("failed to parse aggregator CA: missing cluster.aggregatorCA");
      const existing = read(ctx, KubernetesDynamicCertsType, SECRET_IDS.k8sDynamicCerts);
      const inputs = digest({ ca: root.issuingCA.crt, aggregator: root.aggregatorCA.crt, ips: sans.ips, dns: sans.dnsNames, validity });
      if (reissueReason(existing, inputs) === undefined) return { requeueAfterMs: msUntilRenewal(existing) };
      const [apiServer, apiServerKubeletClient, frontProxy] = await Promise.all([
        issueLeaf(root.issuingCA, {
          subject: { commonName: "kube-apiserver", organizations: ["kube-master"] },
          keyUsage: SERVING_KEY_USAGE,
          extKeyUsage: [ExtKeyUsage.ServerAuth],
          ipSANs: sans.ips,
          dnsSANs: sans.dnsNames,
          validityMs: validity,
        }),
        issueLeaf(root.issuingCA, {
          subject: { commonName: "apiserver-kubelet-client", organizations: ["system:masters"] },
          keyUsage: SERVING_KEY_USAGE,
          extKeyUsage: [ExtKeyUsage.ClientAuth],
          validityMs: validity,
        }),
        issueLeaf(root.aggregatorCA, {
          subject: { commonName: "front-proxy-client" },
          keyUsage: SERVING_KEY_USAGE,
          extKeyUsage: [ExtKeyUsage.ClientAuth],
          validityMs: validity,
        }),
      ]);
      const spec: KubernetesDynamicCertsSpec = { apiServer, apiServerKubeletClient, frontProxy };
      ctx.apply({ ...ptr, spec, annotations: issuedAnnotations(inputs, validity / 2) });
      return { requeueAfterMs: requeueAfter(validity / 2) };
    },
  };
}
