/** A TCP connect-and-close probe (upstream's apid health check dials the API port the same way). */
import { createConnection } from "node:net";

export function tcpProbe(host: string, port: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ host, port });
    const done = (err?: Error) => {
      signal?.removeEventListener("abort", onAbort);
      sock.destroy();
      if (err) reject(err);
      else resolve();
    };
    const onAbort = () => done(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    sock.once("connect", () => done());
    sock.once("error", (err: NodeJS.ErrnoException) => done(new Error(`dial tcp ${host}:${port}: ${err.code === "ECONNREFUSED" ? "connect: connection refused" : err.message}`)));
  });
}
