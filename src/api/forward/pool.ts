/**
 * The backends, one per target and reused by every call to it (upstream's APIDFactory cache), bounded in
 * number: a caller naming ever new targets cannot make the node hold ever more of them. Backends that hold
 * nothing (no calls, no connection) are dropped first when the pool is full; they are also dropped when
 * their idle connection closes. flush() closes them all (the PKI changed: new connections must use the
 * new certificates).
 */
import * as grpc from "@grpc/grpc-js";
import { TlsDialer } from "../../host/tls-dial.js";
import { Backend, DEFAULT_BACKEND_OPTIONS, StatusError, type BackendOptions, type ClientMaterial } from "./backend.js";

export interface PoolOptions extends BackendOptions {
  maxBackends: number;
}

export const DEFAULT_POOL_OPTIONS: PoolOptions = { ...DEFAULT_BACKEND_OPTIONS, maxBackends: 1024 };

export class BackendPool {
  private readonly backends = new Map<string, Backend>();
  readonly dialer = new TlsDialer();

  constructor(
    private readonly material: () => ClientMaterial | undefined,
    readonly options: PoolOptions = DEFAULT_POOL_OPTIONS,
  ) {}

  get size(): number {
    return this.backends.size;
  }

  /** Whether a backend for `target` is held. */
  has(target: string): boolean {
    return this.backends.has(target);
  }

  /** Outgoing sockets open (in handshake or serving). */
  get sockets(): number {
    return this.dialer.size;
  }

  get(target: string): Backend {
    const existing = this.backends.get(target);
    if (existing) return existing;
    if (this.backends.size >= this.options.maxBackends) this.evict();
    if (this.backends.size >= this.options.maxBackends) {
      throw new StatusError(grpc.status.RESOURCE_EXHAUSTED, `too many forwarding targets in use (limit ${this.options.maxBackends})`);
    }
    const b = new Backend(target, this.material, this.dialer, this.options, (idle) => {
      if (this.backends.get(idle.target) === idle) this.backends.delete(idle.target);
    });
    this.backends.set(target, b);
    return b;
  }

  /** Close every backend (calls in flight finish on their connections); the next call dials anew. */
  flush(): void {
    for (const b of this.backends.values()) b.close();
    this.backends.clear();
  }

  /** Shutdown: close everything now. */
  close(): void {
    this.flush();
    this.dialer.destroyAll();
  }

  private evict(): void {
    for (const [t, b] of this.backends) if (b.calls === 0 && !b.connected) this.backends.delete(t);
  }
}
