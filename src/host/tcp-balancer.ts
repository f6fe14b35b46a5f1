/**
 * A TCP load balancer (what KubePrism is): it listens on one address and hands each accepted connection to a
 * healthy upstream, copying bytes both ways (half-closes included) until either side closes; then both sockets
 * are destroyed, so nothing outlives its connection. Upstreams are probed with a TCP connect every
 * `healthIntervalMs` and scored by UpstreamList; a failed dial also counts against the upstream, and that
 * client connection is closed (the client reconnects and gets another upstream), as go-loadbalancer does.
 */
import net from "node:net";
import { latencyTier, UpstreamList } from "../machinery/net/upstreams.js";

export interface LoadBalancerOptions {
  host: string;
  port: number;
  /** Dial timeout per upstream connection (KubePrism: 15 s). */
  dialTimeoutMs?: number;
  /** TCP keep-alive period on both sockets (KubePrism: 30 s). */
  keepAliveMs?: number;
  /** Interval and timeout of the upstream health probes (KubePrism: 20 s and 15 s). */
  healthIntervalMs?: number;
  healthTimeoutMs?: number;
}

export interface LoadBalancer {
  /** `host:port` it listens on. */
  readonly endpoint: string;
  /** Replaces the upstreams (`host:port` each); kept ones keep their health. */
  setUpstreams(addresses: string[]): void;
  /** True when some upstream can take a connection. */
  healthy(): boolean;
  /** Stops listening, ends every proxied connection and the probes. */
  close(): Promise<void>;
}

export type LoadBalancerFactory = (opts: LoadBalancerOptions) => Promise<LoadBalancer>;

export function splitHostPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  if (!m) throw new Error(`address ${address}: missing port in address`);
  return { host: m[1], port: Number(m[2]) };
}

export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

export class TcpBalancer implements LoadBalancer {
  readonly endpoint: string;
  private readonly list = new UpstreamList();
  private readonly sockets = new Set<net.Socket>();
  private probeTimer?: NodeJS.Timeout;
  private probing?: Promise<void>;
  private closed = false;

  private constructor(
    private readonly server: net.Server,
    private readonly opts: Required<LoadBalancerOptions>,
  ) {
    this.endpoint = joinHostPort(opts.host, opts.port);
  }

  /** Listens on `host:port` (port 0: any free port; `endpoint` then names the one chosen). */
  static async start(options: LoadBalancerOptions): Promise<TcpBalancer> {
    const opts: Required<LoadBalancerOptions> = {
      dialTimeoutMs: 15_000,
      keepAliveMs: 30_000,
      healthIntervalMs: 20_000,
      healthTimeoutMs: 15_000,
      ...options,
    };
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true });
    await new Promise<void>((resolve, reject) => {
      const onError = (e: Error & { code?: string }) => {
        const why = e.code === "EADDRINUSE" ? "bind: address already in use" : e.code === "EADDRNOTAVAIL" ? "bind: cannot assign requested address" : e.message;
        reject(new Error(`listen tcp ${joinHostPort(opts.host, opts.port)}: ${why}`));
      };
      server.once("error", onError);
      server.listen({ host: opts.host, port: opts.port, exclusive: true }, () => {
        server.off("error", onError);
        resolve();
      });
    });
    const port = (server.address() as net.AddressInfo).port;
    const lb = new TcpBalancer(server, { ...opts, port });
    server.on("connection", (c) => lb.handle(c));
    // A failing accept must not take the process down.
    server.on("error", () => {});
    lb.scheduleProbe(0);
    return lb;
  }

  setUpstreams(addresses: string[]): void {
    this.list.reconcile(addresses);
  }

  upstreams(): string[] {
    return this.list.addresses();
  }

  healthy(): boolean {
    return this.list.healthy();
  }

  /** Client and upstream sockets currently open. */
  get openSockets(): number {
    return this.sockets.size;
  }

  /** Runs one round of health probes now (tests; the timer does this every interval). */
  async probe(): Promise<void> {
    await Promise.all(
      this.list.addresses().map(async (address) => {
        const started = performance.now();
        const ok = await this.dialProbe(address);
        if (ok) this.list.up(address, latencyTier(performance.now() - started));
        else this.list.down(address);
      }),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.probeTimer);
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await this.probing;
    await stopped;
  }

  private scheduleProbe(delay: number): void {
    if (this.closed) return;
    this.probeTimer = setTimeout(() => {
      this.probing = this.probe().finally(() => this.scheduleProbe(this.opts.healthIntervalMs));
    }, delay);
    this.probeTimer.unref();
  }

  private dialProbe(address: string): Promise<boolean> {
    return new Promise((resolve) => {
      let hp: { host: string; port: number };
      try {
        hp = splitHostPort(address);
      } catch {
        return resolve(false);
      }
      const s = net.connect({ host: hp.host, port: hp.port });
      const done = (ok: boolean) => {
        clearTimeout(t);
        s.destroy();
        resolve(ok);
      };
      const t = setTimeout(() => done(false), this.opts.healthTimeoutMs);
      s.once("connect", () => done(true));
      s.on("error", () => done(false));
    });
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.once("close", () => this.sockets.delete(s));
  }

  private handle(client: net.Socket): void {
    this.track(client);
    if (this.closed) return void client.destroy();
    const address = this.list.pick();
    if (address === undefined) return void client.destroy();
    let hp: { host: string; port: number };
    try {
      hp = splitHostPort(address);
    } catch {
      this.list.down(address);
      return void client.destroy();
    }
    const upstream = net.connect({ host: hp.host, port: hp.port, allowHalfOpen: true });
    this.track(upstream);
    let connected = false;
    const dialTimer = setTimeout(() => upstream.destroy(new Error("i/o timeout")), this.opts.dialTimeoutMs);
    const teardown = () => {
      clearTimeout(dialTimer);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", teardown);
    client.once("close", teardown);
    upstream.on("error", () => {
      if (!connected) this.list.down(address);
      teardown();
    });
    upstream.once("close", teardown);
    upstream.once("connect", () => {
      connected = true;
      clearTimeout(dialTimer);
      client.setKeepAlive(true, this.opts.keepAliveMs);
      upstream.setKeepAlive(true, this.opts.keepAliveMs);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  }
}

export const startTcpBalancer: LoadBalancerFactory = (opts) => TcpBalancer.start(opts);
