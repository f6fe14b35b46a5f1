/**
 * The kubelet's own API (https://127.0.0.1:10250), read with a client certificate the kubelet accepts (on
 * control planes: the API server's kubelet client certificate). Only `GET /pods/` is needed: the pods the
 * kubelet runs, static ones included, with their status. One connection per request, closed after it.
 */
import https from "node:https";

export interface KubeletClientOptions {
  host?: string;
  port?: number;
  /** Client certificate and key, PEM. */
  cert: string;
  key: string;
  /** CAs to trust for the kubelet's serving certificate, PEM (several may be concatenated). */
  ca: string;
  /** TLS server name to verify: the node name (the kubelet's self-signed certificate carries it). */
  servername: string;
  timeoutMs?: number;
}

export interface KubeletPod {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  status?: Record<string, unknown>;
}

export type KubeletPodsFetcher = (opts: KubeletClientOptions, signal?: AbortSignal) => Promise<KubeletPod[]>;

export const fetchKubeletPods: KubeletPodsFetcher = (opts, signal) => {
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port ?? 10250;
  const url = `https://${host.includes(":") ? `[${host}]` : host}:${port}/pods/`;
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host,
        port,
        path: "/pods/",
        method: "GET",
        agent: false,
        cert: opts.cert,
        key: opts.key,
        ca: opts.ca,
        servername: opts.servername,
        headers: { Accept: "application/json" },
        timeout: opts.timeoutMs ?? 30_000,
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (e) => reject(new Error(`Get ${JSON.stringify(url)}: ${e.message}`)));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 200) return reject(new Error(`Get ${JSON.stringify(url)}: the kubelet answered ${res.statusCode}: ${text.trim()}`));
          try {
            const list = JSON.parse(text) as { items?: KubeletPod[] };
            resolve(list.items ?? []);
          } catch (e) {
            reject(new Error(`Get ${JSON.stringify(url)}: not a pod list: ${(e as Error).message}`));
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("context deadline exceeded")));
    req.on("error", (e: Error & { code?: string }) =>
      reject(new Error(`Get ${JSON.stringify(url)}: ${e.code === "ECONNREFUSED" ? `dial tcp ${host}:${port}: connect: connection refused` : e.message}`)),
    );
    req.end();
  });
};
