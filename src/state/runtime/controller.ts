/**
 * The controller contract (after cosi-project/runtime's controller.Controller, simplified to a
 * reconcile function): a controller names its inputs and outputs, and the runtime calls `reconcile`
 * whenever an input may have changed. Reconcile reads anything, writes only its declared outputs, and
 * is expected to converge from scratch on every call (level-triggered, not edge-triggered).
 */
import type { Pointer, Resource } from "../../machinery/resources/resource.js";
import type { ListOptions } from "../types.js";

/** Strong and weak inputs both wake the controller; the kind is reported in the dependency graph. */
export interface Input {
  namespace: string;
  type: string;
  /** Watch only this resource instead of the whole kind. */
  id?: string;
  kind: "strong" | "weak";
}

/** Exclusive: this controller is the only writer of the type. Shared: several controllers write it, each owning its own resources. */
export interface Output {
  type: string;
  kind: "exclusive" | "shared";
}

/** What a reconcile may write without building a full Resource. */
export interface ResourceInit<S = unknown> extends Pointer {
  spec: S;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ReconcileContext {
  /** Owner of every write, i.e. the controller name. */
  readonly owner: string;
  /** Aborted when the runtime stops; long waits inside reconcile should honour it. */
  readonly signal: AbortSignal;
  get(ptr: Pointer): Resource | undefined;
  list(namespace: string, type: string, opts?: ListOptions): Resource[];
  /** Create-or-update an output resource (a no-op when nothing changed). */
  apply<S>(r: Resource<S> | ResourceInit<S>): Resource<S>;
  /** Destroy an output resource; false when it did not exist. */
  destroy(ptr: Pointer): boolean;
  /** Destroy every resource of an output type owned by this controller whose id is not in `keep`; returns how many. */
  cleanup(namespace: string, type: string, keep: Iterable<string>): number;
  log(msg: string, fields?: Record<string, unknown>): void;
}

export type ReconcileResult = void | { requeueAfterMs?: number };

export interface Controller {
  /** `<domain>.XxxController`, as Talos names them; it becomes the owner of the outputs. */
  name: string;
  inputs: Input[];
  outputs: Output[];
  reconcile(ctx: ReconcileContext): Promise<ReconcileResult> | ReconcileResult;
  /**
   * Events from outside the store that may change what reconcile would produce (the kernel's link
   * notifications, a file being replaced), for controllers that mirror such state instead of polling
   * it. Called once when the controller starts; `wake` asks for a reconcile (coalesced like input
   * events); the returned function stops the subscription when the controller stops.
   */
  wakeups?(wake: () => void): () => void;
}

export type DependencyEdgeType = "OUTPUT_EXCLUSIVE" | "OUTPUT_SHARED" | "INPUT_STRONG" | "INPUT_WEAK";

/** One edge of /inspect.InspectService/ControllerRuntimeDependencies; outputs have no namespace. */
export interface DependencyEdge {
  controllerName: string;
  edgeType: DependencyEdgeType;
  namespace: string;
  type: string;
  id?: string;
}

/** What the runtime knows about one controller, for diagnostics. */
export interface ControllerStatus {
  name: string;
  /** Completed reconcile calls, successful or not. */
  runs: number;
  running: boolean;
  /** Failures since the last success; 0 when healthy. */
  consecutiveFailures: number;
  lastError?: string;
  lastErrorAt?: Date;
  lastSuccessAt?: Date;
  /** When the next retry after a failure is due. */
  retryAt?: Date;
}

export type RuntimeLogger = (controller: string, msg: string, fields?: Record<string, unknown>) => void;
