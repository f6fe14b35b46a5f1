/**
 * Credentials for people: Kubeconfig (control planes: a fresh admin certificate from the Kubernetes CA — CN admin,
 * O system:masters, cluster.adminKubeconfig.certLifetime, default one year — for the cluster endpoint, trusting the
 * accepted CAs, as a tar.gz holding one `kubeconfig` with mode 0600) and GenerateClientConfiguration (a talosconfig
 * with chosen roles from the OS CA).
 */
import { gzipSync } from "node:zlib";
import type { GenerateClientConfigurationRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { invalidArgument, failedPrecondition } from "../../machinery/errors.js";
import { tarFiles } from "../../machinery/archive/tar.js";
import { issueClientCert } from "../../machinery/pki/issue.js";
import { ADMIN_CERT_DEFAULT_LIFETIME_MS, generateKubeconfig, goDurationMs } from "../../machinery/kubernetes/kubeconfig.js";
import { buildTalosconfig } from "../../machinery/generate/talosconfig.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { requireControlPlane } from "../guards.js";
import { one, withMetadata } from "../reply.js";

const pem = (b64: string | undefined, what: string): string => {
  const text = b64 ? Buffer.from(b64, "base64").toString("utf8") : "";
  if (!text.includes("-----BEGIN")) throw failedPrecondition(`${what} is missing from the machine config`);
  return text;
};

export function accessHandlers(deps: ApiDeps): Handlers {
  return {
    Kubeconfig: async (_req, send, ctx: CallContext) => {
      requireControlPlane(deps, "kubeconfig");
      const cfg = deps.node.activeConfig!;
      const ca = cfg.kubernetesCA();
      if (!ca) throw failedPrecondition("the Kubernetes CA (cluster.ca or KubeAPIServerCAConfig) is missing from the machine config");
      const endpoint = cfg.endpoint();
      if (!endpoint) throw failedPrecondition("cluster.controlPlane.endpoint is missing from the machine config");
      let lifetimeMs: number;
      let accepted: string[];
      try {
        lifetimeMs = goDurationMs(cfg.cluster?.adminKubeconfig?.certLifetime, "cluster.adminKubeconfig.certLifetime") || ADMIN_CERT_DEFAULT_LIFETIME_MS;
        accepted = (cfg.cluster?.acceptedCAs ?? []).map((a, i) => pem(a.crt, `cluster.acceptedCAs[${i}].crt`));
      } catch (err) {
        throw failedPrecondition((err as Error).message);
      }
      if (lifetimeMs <= 0) throw failedPrecondition("cluster.adminKubeconfig.certLifetime must be positive");
      // A fresh client certificate on every call, as upstream's GenerateAdmin: the kubeconfig is handed to a person.
      const kubeconfig = await generateKubeconfig({
        clusterName: cfg.clusterName() ?? "",
        issuingCA: ca,
        acceptedCAs: [...accepted, ca.crt],
        lifetimeMs,
        commonName: "admin",
        organization: "system:masters",
        endpoint,
        username: "admin",
        contextName: "admin",
      });
      const archive = gzipSync(tarFiles([{ name: "kubeconfig", data: Buffer.from(kubeconfig), mode: 0o600 }]));
      await send(withMetadata(ctx, { bytes: archive }));
    },

    GenerateClientConfiguration: async (req: GenerateClientConfigurationRequest, ctx: CallContext) => {
      requireControlPlane(deps, "generate client configuration");
      const ttl = req.crtTtl ? Number(req.crtTtl.seconds) * 1000 + Math.floor(req.crtTtl.nanos / 1e6) : 0;
      if (ttl <= 0) throw invalidArgument("crt_ttl should be positive");
      const cfg = deps.node.activeConfig!;
      const ca = { crt: pem(cfg.machine?.ca?.crt, "machine.ca.crt"), key: pem(cfg.machine?.ca?.key, "machine.ca.key") };
      const roles = [...new Set(req.roles.map((r) => r.trim()).filter(Boolean))].sort();
      const cert = await issueClientCert(ca, { roles, validityMs: ttl });
      let contextName = cfg.clusterName() ?? "talos";
      if (roles.length === 1) contextName = `${roles[0].replace(/^os:/, "")}@${contextName}`;
      const talosconfig = buildTalosconfig({ contextName, endpoints: [], caPem: ca.crt, crtPem: cert.crt, keyPem: cert.key });
      const enc = new TextEncoder();
      return one(ctx, { ca: enc.encode(ca.crt), crt: enc.encode(cert.crt), key: enc.encode(cert.key), talosconfig: enc.encode(talosconfig) });
    },
  };
}
