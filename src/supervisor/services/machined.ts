/**
 * The agent itself as a service, so `talosctl service` lists machined as Running and `talosctl logs
 * machined` shows the agent's log (point the logger at supervisor.logs.writer("machined")).
 */
import { GoroutineRunner, type ServiceMain } from "../runners/goroutine.js";
import type { Runner, Service } from "../types.js";

/** Idles until the service is stopped. */
const idle: ServiceMain = (ctx) =>
  new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
  });

export class MachinedService implements Service {
  readonly id = "machined";

  /** main: what runs as the service (e.g. serving the API until ctx.signal aborts); default: idle. */
  constructor(private readonly main: ServiceMain = idle) {}

  runner(): Runner {
    return new GoroutineRunner(this.id, this.main);
  }
}
