/**
 * The KubePrism load balancer over real loopback sockets: two upstream servers, connections spread over them,
 * bytes (and half-closes) pass both ways, an upstream that goes down stops getting connections and gets them
 * again when it is back, and after hundreds of connections no socket or descriptor is left behind.
 */
import { readdirSync } from "node:fs";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TcpBalancer } from "../../src/host/tcp-balancer.js";

const eventually = async (cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** An upstream that greets with its name, then echoes; it half-closes when the client does. */
class Upstream {
  server?: net.Server;
  port = 0;
  private readonly conns = new Set<net.Socket>();
  constructor(readonly name: string) {}

  async start(port = 0): Promise<this> {
    const server = net.createServer({ allowHalfOpen: true }, (c) => {
      this.conns.add(c);
      c.on("close", () => this.conns.delete(c));
      c.on("error", () => {});
      c.write(`${this.name}\n`);
      c.pipe(c);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return this;
  }

  /** Aborts every open connection with a TCP reset, as a crashing server does. */
  resetAll(): void {
    for (const c of this.conns) c.resetAndDestroy();
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const c of this.conns) c.destroy();
    await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }
}

/** Connects through the balancer and returns the greeting (or "" when the connection is closed without one). */
function greet(port: number): Promise<{ name: string; socket: net.Socket }> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    let buf = "";
    s.on("data", (d) => {
      buf += d.toString();
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        s.removeAllListeners("data");
        resolve({ name: buf.slice(0, nl), socket: s });
      }
    });
    s.on("error", () => {});
    s.on("close", () => resolve({ name: "", socket: s }));
  });
}

async function greetAndClose(port: number): Promise<string> {
  const { name, socket } = await greet(port);
  socket.destroy();
  return name;
}

const fds = () => readdirSync("/proc/self/fd").length;

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function setup() {
  const a = await new Upstream("A").start();
  const b = await new Upstream("B").start();
  const lb = await TcpBalancer.start({ host: "127.0.0.1", port: 0, healthIntervalMs: 50, healthTimeoutMs: 500, dialTimeoutMs: 2_000 });
  cleanup.push(() => a.stop(), () => b.stop(), () => lb.close());
  lb.setUpstreams([a.address, b.address]);
  const port = Number(lb.endpoint.split(":").pop());
  return { a, b, lb, port };
}

describe("TcpBalancer", () => {
  it("hands connections to the upstreams and copies bytes both ways, half-close included", async () => {
    const { lb, port } = await setup();
    expect(lb.endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    // Which one: the fastest latency tier first, round-robin within it (checked in the UpstreamList test).
    for (let i = 0; i < 4; i++) expect(["A", "B"]).toContain(await greetAndClose(port));

    const { socket } = await greet(port);
    const echoed = new Promise<string>((resolve) => {
      let got = "";
      socket.on("data", (d) => (got += d.toString()));
      socket.on("end", () => resolve(got));
    });
    socket.end("hello through kubeprism");
    expect(await echoed).toBe("hello through kubeprism");
    socket.destroy();
    expect(lb.healthy()).toBe(true);
  });

  it("moves connections off an upstream that goes down, and onto it again when it is back", async () => {
    const { a, b, lb, port } = await setup();
    const first = await greet(port);
    const [down, other] = first.name === "A" ? [a, b] : [b, a];
    // The proxied connection to the upstream that dies is closed, not left hanging.
    const closed = new Promise<void>((r) => first.socket.once("close", () => r()));
    const downPort = down.port;
    await down.stop();
    await closed;

    const all = (name: string) => async () => {
      for (let i = 0; i < 6; i++) if ((await greetAndClose(port)) !== name) return false;
      return true;
    };
    // Failed dials and probes mark it down; then every connection lands on the other one.
    await eventually(all(other.name), `connections to move to ${other.name}`);

    await down.start(downPort);
    await other.stop();
    await eventually(all(down.name), `connections to move back to ${down.name}`);

    await down.stop();
    await eventually(() => !lb.healthy(), "no healthy upstream");
    expect(await greetAndClose(port)).toBe("");
  });

  it("keeps upstream health across setUpstreams and refuses a port in use", async () => {
    const { a, b, lb, port } = await setup();
    lb.setUpstreams([b.address]);
    for (let i = 0; i < 4; i++) expect(await greetAndClose(port)).toBe("B");
    lb.setUpstreams([b.address, a.address]);
    expect(lb.upstreams()).toEqual([b.address, a.address]);
    await expect(TcpBalancer.start({ host: "127.0.0.1", port })).rejects.toThrow(`listen tcp 127.0.0.1:${port}: bind: address already in use`);
  });

  it("leaves no socket and no descriptor behind after connection churn, resets and close", async () => {
    const { a, b, lb, port } = await setup();
    // Warm up (lazy handles of the runtime), then measure.
    for (let i = 0; i < 10; i++) await greetAndClose(port);
    await eventually(() => lb.openSockets === 0, "sockets closed after warm-up");
    const before = fds();
    for (let round = 0; round < 10; round++) {
      await Promise.all(Array.from({ length: 20 }, () => greetAndClose(port)));
    }
    // Clients that vanish mid-greeting too.
    await Promise.all(
      Array.from({ length: 20 }, () => new Promise<void>((r) => {
        const s = net.connect({ host: "127.0.0.1", port }, () => {
          s.destroy();
          r();
        });
        s.on("error", () => r());
      })),
    );
    // Connections whose upstream aborts them (a reset, no orderly close) are closed on the client side too.
    const held = await Promise.all(Array.from({ length: 10 }, () => greet(port)));
    const heldClosed = Promise.all(held.map((g) => new Promise<void>((r) => (g.socket.destroyed ? r() : g.socket.once("close", () => r())))));
    a.resetAll();
    b.resetAll();
    await heldClosed;
    await eventually(() => lb.openSockets === 0, "every proxied socket closed");
    await eventually(() => fds() <= before, `descriptor count back to ${before} (now ${fds()})`);

    const open = await greet(port);
    expect(lb.openSockets).toBe(2);
    const gone = new Promise<void>((r) => open.socket.once("close", () => r()));
    await lb.close();
    await gone;
    expect(lb.openSockets).toBe(0);
    await expect(greetAndClose(port)).resolves.toBe("");
  });
});
