/**
 * Credentials for people: Kubeconfig (an admin certificate from the Kubernetes CA, as a tar.gz holding one
 * `kubeconfig`) and GenerateClientConfiguration (a talosconfig with chosen roles from the OS CA).
 */
import { gzipSync } from "node:zlib";
import { stringify } from "yaml";
import type { GenerateClientConfigurationRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { invalidArgument, failedPrecondition } from "../../machinery/errors.js";
import { tarFiles } from "../../machinery/archive/tar.js";
import { issueClientCert, issueKubernetesAdminCert } from "../../machinery/pki/issue.js";
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
      const admin = await issueKubernetesAdminCert(ca);
      const name = cfg.clusterName() ?? "talos";
      const user = `admin@${name}`;
      const kubeconfig = stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name, cluster: { server: cfg.endpoint(), "certificate-authority-data": Buffer.from(ca.crt).toString("base64") } }],
        users: [
          {
            name: user,
            user: {
              "client-certificate-data": Buffer.from(admin.crt).toString("base64"),
              "client-key-data": Buffer.from(admin.key).toString("base64"),
            },
          },
        ],
        contexts: [{ context: { cluster: name, namespace: "default", user }, name: user }],
        "current-context": user,
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
