/**
 * Socket tables: the /proc/net line format (IPv4/IPv6 in host byte order, hex ports and counters), the live tables
 * with the owning process found through the socket inode, and (as root) a named network namespace created here.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createServer, type Server } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { netstat, parseSocketTable } from "../../src/host/netstat.js";

const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 ffff8d3a4c0e1000 100 0 0 10 0
   1: 0100007F:B6E2 0100007F:0CEA 01 0000000A:00000002 02:000003E8 00000003  1000        0 5678 3 ffff8d3a4c0e2000 20 4 30 10 -1
`;
const TCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:C350 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 42 1 ffff8d3a4c0e3000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:C350 0000000000000000FFFF00000100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 43 1 ffff8d3a4c0e4000 20 4 30 10 -1
   2: 000080FE00000000FF00FC00010000FE:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 44 1 ffff8d3a4c0e5000 100 0 0 10 0
`;

describe("socket tables", () => {
  it("parses /proc/net lines like go-netstat", () => {
    const [listen, conn] = parseSocketTable("tcp", TCP);
    expect(listen).toMatchObject({ protocol: "tcp", localIP: "127.0.0.1", localPort: 3306, remoteIP: "0.0.0.0", remotePort: 0, state: 10, inode: 1234, ref: 1, netns: "" });
    expect(listen.pointer).toBe(0xffff8d3a4c0e1000n);
    expect(conn).toMatchObject({ remoteIP: "127.0.0.1", remotePort: 3306, state: 1, txQueue: 10, rxQueue: 2, timerActive: 2, timerWhen: 1000, retransmits: 3, uid: 1000 });
    const v6 = parseSocketTable("tcp6", TCP6, "ns1");
    // Go prints v4-mapped addresses in dotted form and IPv6 in RFC 5952 form.
    expect(v6.map((e) => [e.localIP, e.localPort, e.remoteIP, e.netns])).toEqual([
      ["::", 50000, "::", "ns1"],
      ["127.0.0.1", 50000, "127.0.0.1", "ns1"],
      ["fe80::fc:ff:fe00:1", 22, "::", "ns1"],
    ]);
  });

  let server: Server | undefined;
  afterAll(() => server?.close());

  it("finds a listener of this process in the live tables, with pid and program", async () => {
    server = createServer();
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const mine = netstat({ protocols: ["tcp", "tcp6"], hostNetwork: true, pid: true }).filter((e) => e.localPort === port);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ protocol: "tcp", localIP: "127.0.0.1", state: 10, process: { pid: process.pid } });
    expect(mine[0].process?.name).toBe(execFileSync("cat", [`/proc/${process.pid}/comm`], { encoding: "utf8" }).trim());
  });

  const root = process.getuid?.() === 0 && spawnSync("ip", ["-V"]).status === 0;
  it.skipIf(!root)("reads a named network namespace from inside it (root)", async () => {
    const ns = `machined-netstat-${process.pid}`;
    // A port nothing listens on in our own namespace (other work shares this host).
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    execFileSync("ip", ["netns", "add", ns]);
    const child = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", `require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('up'))`], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      execFileSync("ip", ["-n", ns, "link", "set", "lo", "up"]);
      await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
      const inside = netstat({ protocols: ["tcp"], hostNetwork: false, netns: [ns], pid: true });
      expect(inside.map((e) => [e.localIP, e.localPort, e.netns, e.process?.pid])).toEqual([["127.0.0.1", port, ns, child.pid]]);
      // Our own namespace does not have it, and we are back in it afterwards.
      expect(netstat({ protocols: ["tcp"], hostNetwork: true }).some((e) => e.localPort === port && e.netns === "")).toBe(false);
      expect(netstat({ protocols: ["tcp"], hostNetwork: false, allNetns: true }).some((e) => e.netns === ns && e.localPort === port)).toBe(true);
      expect(() => netstat({ protocols: ["tcp"], hostNetwork: false, netns: ["../etc"] })).toThrow(/invalid network namespace name/);
    } finally {
      child.kill("SIGKILL");
      spawnSync("ip", ["netns", "del", ns]);
    }
  });
});
