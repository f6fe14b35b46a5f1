/**
 * `apid`, the authenticated Talos API on port 50000, which upstream lists on every configured node (trustd, the
 * control planes' other API service, is in trustd.ts).
 *
 * Here the API is served by machined itself, so `apid` is an in-process service: Running while the node is
 * configured, healthy when its port accepts connections (upstream's health check), and its log gets one line per
 * API call (src/api/request-log.ts).
 */
import { tcpProbe } from "../../host/net/probe.js";
import { GoroutineRunner } from "../runners/goroutine.js";
import type { Runner, Service } from "../types.js";

/** Go's log prefix (`2006/01/02 15:04:05 `), as upstream's apid log lines start. */
export function goLogTime(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}/${p(d.getMonth() + 1)}/${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export interface ApiEndpoint {
  host: string;
  port: number;
}

export class ApidService implements Service {
  readonly id = "apid";
  readonly inProcess = true;

  /** endpoint: where the API listens (undefined until it does). */
  constructor(private readonly endpoint: () => ApiEndpoint | undefined) {}

  runner(): Runner {
    return new GoroutineRunner(this.id, async (ctx) => {
      const ep = this.endpoint();
      ctx.log.write(`${goLogTime()} apid: serving the Talos API${ep ? ` on ${ep.host}:${ep.port}` : ""} (inside machined)\n`);
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    });
  }

  health() {
    return {
      check: async (signal: AbortSignal) => {
        const ep = this.endpoint();
        if (!ep) throw new Error("the API is not listening yet");
        // A wildcard listener is reached on loopback, as upstream dials 127.0.0.1 for an empty host.
        const host = ep.host === "0.0.0.0" || ep.host === "" ? "127.0.0.1" : ep.host === "::" ? "::1" : ep.host;
        await tcpProbe(host, ep.port, signal);
      },
    };
  }
}
