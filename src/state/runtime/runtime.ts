/**
 * The controller runtime: registers controllers, checks that output ownership is unambiguous, runs
 * each controller independently (a failing one backs off without affecting the others) and exposes
 * the dependency graph and per-controller status.
 */
import type { State } from "../types.js";
import type { Controller, ControllerStatus, DependencyEdge, RuntimeLogger } from "./controller.js";
import { dependencyGraph } from "./graph.js";
import { ControllerRunner, type BackoffOptions } from "./runner.js";

export interface RuntimeOptions {
  logger?: RuntimeLogger;
  /** Retry delays after a failed reconcile; defaults to 100 ms doubling up to 30 s. */
  backoff?: Partial<BackoffOptions>;
}

export class ControllerRuntime {
  private readonly runners = new Map<string, ControllerRunner>();
  private readonly abort = new AbortController();
  private readonly logger: RuntimeLogger;
  private readonly backoff: BackoffOptions;
  private started = false;

  constructor(
    private readonly state: State,
    opts: RuntimeOptions = {},
  ) {
    this.logger = opts.logger ?? (() => {});
    this.backoff = { initialMs: 100, maxMs: 30_000, factor: 2, ...opts.backoff };
  }

  /** Adds a controller; once the runtime is started it starts immediately. */
  register(controller: Controller): void {
    if (this.abort.signal.aborted) throw new Error("controller runtime is stopped");
    if (this.runners.has(controller.name)) throw new Error(`controller ${controller.name} is already registered`);
    this.checkOutputs(controller);
    const runner = new ControllerRunner(controller, this.state, this.abort.signal, this.logger, this.backoff);
    this.runners.set(controller.name, runner);
    if (this.started) runner.start();
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const runner of this.runners.values()) runner.start();
  }

  /** Stops every controller and waits for in-flight reconciles to return. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all([...this.runners.values()].map((r) => r.stop()));
  }

  dependencyGraph(): DependencyEdge[] {
    return dependencyGraph([...this.runners.values()].map((r) => r.controller));
  }

  status(name: string): ControllerStatus | undefined {
    return this.runners.get(name)?.status();
  }

  statuses(): ControllerStatus[] {
    return [...this.runners.values()].map((r) => r.status()).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** An exclusive output has exactly one writer; a type cannot be both exclusive and shared. */
  private checkOutputs(controller: Controller): void {
    for (const out of controller.outputs) {
      for (const other of this.runners.values()) {
        const clash = other.controller.outputs.find((o) => o.type === out.type);
        if (clash && (clash.kind === "exclusive" || out.kind === "exclusive")) {
          throw new Error(
            `controller ${controller.name} declares ${out.kind} output ${out.type}, ` +
              `which ${other.controller.name} already declares as ${clash.kind}`,
          );
        }
      }
    }
  }
}
