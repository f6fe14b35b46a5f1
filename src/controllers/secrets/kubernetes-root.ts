/**
 * secrets.RootKubernetesController: KubernetesRootSecret `k8s` on control planes, from the machine config as
 * upstream derives it: cluster name and endpoints (the local endpoint is KubePrism's when enabled, else the local
 * API server port), API server certSANs, DNS domain, the first IP of each service subnet, the Kubernetes CA
 * (issuing CA dropped without its key; accepted CAs + its certificate), service account key, aggregator CA,
 * encryption secrets and the bootstrap token split into id and secret.
 */
import { KubernetesRootType, SECRETS_NS, type KubernetesRootSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { activeConfig, activeConfigInput, isControlPlane, machineTypeInput } from "../config/active.js";

export const KUBERNETES_ROOT_ID = "k8s";
const DEFAULT_SERVICE_SUBNETS = ["10.96.0.0/12"];

/** The n-th address of a CIDR (n = 1: the first host), as text; undefined for a malformed CIDR. */
export function nthAddress(cidr: string, n: number): string | undefined {
  const [addr, bits] = cidr.trim().split("/");
  const prefix = Number(bits);
  if (addr.includes(":")) {
    const ip = parse6(addr);
    if (!ip || !(prefix >= 0 && prefix <= 128)) return undefined;
    const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(128 - prefix);
    return format6((ip & mask) + BigInt(n));
  }
  const parts = addr.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !(p >= 0 && p <= 255)) || !(prefix >= 0 && prefix <= 32)) return undefined;
  const v = parts.reduce((a, p) => a * 256 + p, 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const r = (((v & mask) >>> 0) + n) >>> 0;
  return [r >>> 24, (r >>> 16) & 255, (r >>> 8) & 255, r & 255].join(".");
}

function parse6(s: string): bigint | undefined {
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const words = (p: string) => (p === "" ? [] : p.split(":").map((g) => parseInt(g, 16)));
  const head = words(halves[0]);
  const tail = halves.length === 2 ? words(halves[1]) : [];
  const all = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  if (all.length !== 8 || all.some((w) => !(w >= 0 && w <= 0xffff))) return undefined;
  return all.reduce((a, w) => (a << 16n) | BigInt(w), 0n);
}

function format6(v: bigint): string {
  const words = Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(16 * (7 - i))) & 0xffffn));
  // The longest run of zero words (at least two) becomes "::", as Go prints addresses.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

export function kubernetesRootController(): Controller {
  const ptr = { namespace: SECRETS_NS, type: KubernetesRootType.type, id: KUBERNETES_ROOT_ID };
  return {
    name: "secrets.RootKubernetesController",
    inputs: [activeConfigInput, machineTypeInput],
    outputs: [{ type: KubernetesRootType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = activeConfig(ctx);
      const v1 = cfg?.v1alpha1();
      if (!cfg || !v1?.machine || !v1.cluster || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      const c = v1.cluster;
      const kubePrism = v1.machine.features?.kubePrism;
      const local = kubePrism?.enabled ? `https://127.0.0.1:${kubePrism.port ?? 7445}` : `https://localhost:${c.controlPlane?.localAPIServerPort ?? 6443}`;
      const subnets = c.network?.serviceSubnets?.length ? c.network.serviceSubnets : DEFAULT_SERVICE_SUBNETS;
      const accepted = (c.acceptedCAs ?? []).filter((x) => x.crt).map((x) => ({ crt: x.crt! }));
      if (c.ca?.crt) accepted.push({ crt: c.ca.crt });
      const [tokenId = "", tokenSecret = ""] = (c.token ?? "").split(".", 2);
      const spec: KubernetesRootSpec = {
        name: c.clusterName ?? "",
        endpoint: c.controlPlane?.endpoint ?? "",
        local_endpoint: local,
        certSANs: c.apiServer?.certSANs ?? [],
        apiServerIPs: subnets.map((s) => nthAddress(s, 1)).filter((x): x is string => !!x),
        dnsDomain: c.network?.dnsDomain ?? "cluster.local",
        issuingCA: c.ca?.crt && c.ca.key ? { crt: c.ca.crt, key: c.ca.key } : null,
        acceptedCAs: accepted,
        serviceAccount: c.serviceAccount?.key ? { key: c.serviceAccount.key } : null,
        aggregatorCA: c.aggregatorCA?.crt && c.aggregatorCA.key ? { crt: c.aggregatorCA.crt, key: c.aggregatorCA.key } : null,
        aesCBCEncryptionSecret: c.aescbcEncryptionSecret ?? "",
        bootstrapTokenID: tokenId,
        bootstrapTokenSecret: tokenSecret,
        secretboxEncryptionSecret: c.secretboxEncryptionSecret ?? "",
      };
      ctx.apply({ ...ptr, spec });
    },
  };
}
