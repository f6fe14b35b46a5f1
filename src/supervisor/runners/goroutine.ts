/**
 * Runs an in-process async function as a service (upstream "goroutine" runner), e.g. the agent itself
 * (`machined`) or small helpers that need a ServiceInfo entry but no child process.
 */
import { ServiceState, type RunContext, type Runner } from "../types.js";

export type ServiceMain = (ctx: RunContext) => Promise<void>;

export class GoroutineRunner implements Runner {
  constructor(
    private readonly name: string,
    private readonly main: ServiceMain,
  ) {}

  toString(): string {
    return `Goroutine(${JSON.stringify(this.name)})`;
  }

  async run(ctx: RunContext): Promise<void> {
    ctx.event(ServiceState.Running, "Service started as goroutine");
    let onAbort = () => {};
    const stopped = new Promise<void>((resolve) => {
      onAbort = resolve;
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    const main = this.main(ctx);
    const first = await Promise.race([main.then(() => "done" as const), stopped.then(() => "stop" as const)]).finally(() =>
      ctx.signal.removeEventListener("abort", onAbort),
    );
    if (first === "stop") {
      ctx.event(ServiceState.Stopping, "Service stopping");
      // The function is expected to honour ctx.signal; its failure after a stop is not a service failure.
      await main.catch(() => {});
    }
  }
}
