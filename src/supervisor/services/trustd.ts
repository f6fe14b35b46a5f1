/**
 * trustd (control planes, port 50001): signs the API server certificates of joining machines that present
 * machine.token. Upstream runs it as its own process; here the gRPC server lives inside machined (src/api/trustd/),
 * so `trustd` is an in-process service over it: Waiting until the server has its certificate, Running while it
 * serves, healthy when its port accepts connections. The server is handed in by the wiring (this layer does not
 * reach into the API edge).
 */
import { tcpProbe } from "../../host/net/probe.js";
import { GoroutineRunner } from "../runners/goroutine.js";
import type { Condition, Runner, Service } from "../types.js";
import { goLogTime } from "./apid.js";

/** Upstream's TrustdPort. */
export const TRUSTD_PORT = 50001;

export interface TrustdEndpoint {
  host: string;
  port: number;
}

/** What the service runs: start/stop a server that can say when it has what it needs. */
export interface TrustdServer {
  /** Shown while Waiting, e.g. `trustd certificate`. */
  readonly waitingFor: string;
  /** Resolves once the server can serve (its certificate exists); rejects when `signal` aborts. */
  ready(signal: AbortSignal): Promise<void>;
  /** Binds and serves; `log` receives the lines of the service log. */
  listen(log: (line: string) => void): Promise<TrustdEndpoint>;
  /** Stops serving (calls in flight are cancelled). */
  close(): Promise<void>;
  /** Where it listens while it does. */
  endpoint(): TrustdEndpoint | undefined;
}

export class TrustdService implements Service {
  readonly id = "trustd";
  readonly inProcess = true;

  constructor(private readonly server: TrustdServer) {}

  conditions(): Condition[] {
    return [{ describe: () => this.server.waitingFor, wait: (signal) => this.server.ready(signal) }];
  }

  runner(): Runner {
    return new GoroutineRunner(this.id, async (ctx) => {
      const log = (line: string) => ctx.log.write(`${goLogTime()} ${line}\n`);
      const ep = await this.server.listen(log);
      try {
        log(`trustd: serving on ${ep.host}:${ep.port}`);
        await new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve();
          else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
        });
      } finally {
        await this.server.close();
      }
    });
  }

  health() {
    return {
      check: async (signal: AbortSignal) => {
        const ep = this.server.endpoint();
        if (!ep) throw new Error("trustd is not listening yet");
        const host = ep.host === "0.0.0.0" || ep.host === "" ? "127.0.0.1" : ep.host === "::" ? "::1" : ep.host;
        await tcpProbe(host, ep.port, signal);
      },
    };
  }
}
