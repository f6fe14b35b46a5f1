/**
 * The API services upstream lists on every configured node: `apid` (the authenticated Talos API on port 50000)
 * and, on control planes, `trustd` (port 50001, which hands API certificates to joining machines).
 *
 * Here the API is served by machined itself, so `apid` is an in-process service: Running while the node is
 * configured, healthy when its port accepts connections (upstream's health check), and its log gets one line per
 * API call (src/api/request-log.ts). trustd is not implemented (it comes with multi-node support), so it is listed
 * as Waiting with that reason instead of pretending to serve.
 */
import { tcpProbe } from "../../host/net/probe.js";
import { GoroutineRunner } from "../runners/goroutine.js";
import type { Condition, Runner, Service } from "../types.js";

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

export const TRUSTD_UNAVAILABLE = "multi-node support (trustd is not implemented yet: port 50001 is not served, so joining machines cannot get API certificates here)";

/** Waits until the service is stopped: what trustd would need does not exist in this build. */
const notImplemented: Condition = {
  describe: () => TRUSTD_UNAVAILABLE,
  wait: (signal) =>
    new Promise<void>((_, reject) => {
      const fail = () => reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
      if (signal.aborted) fail();
      else signal.addEventListener("abort", fail, { once: true });
    }),
};

export class TrustdService implements Service {
  readonly id = "trustd";

  conditions(): Condition[] {
    return [notImplemented];
  }

  runner(): Runner {
    // Never reached: the condition above is never met.
    throw new Error(TRUSTD_UNAVAILABLE);
  }
}
