/**
 * Netstat, PacketCapture and TimeService over mTLS on a configured local-mode node, read the way talosctl reads
 * them (upstream's cli netstat/pcap/time tests): the node's own API listener with its program, a capture of
 * loopback traffic this test generates (root: AF_PACKET), and the time from a tiny SNTP server on 127.0.0.1 that
 * stands in for an NTP server (no internet here).
 */
import { createSocket } from "node:dgram";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService, ApplyConfigurationRequest_Mode as Mode, NetstatRequest_Filter as Filter, ConnectRecord_State as St } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { TimeService, TimeRequestSchema, TimeResponseSchema } from "../../src/machinery/api/gen/time/time_pb.js";
import type { TestClient } from "../helpers/client.js";
import { startFakeNtp, type FakeNtp } from "../helpers/sntp-server.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

const isRoot = process.getuid?.() === 0;
if (!isRoot) console.log("skipping packet capture API test: needs root (AF_PACKET sockets)");

describe("netstat, pcap and time", () => {
  let h: Harness;
  let admin: TestClient;
  let ntp: FakeNtp;

  beforeAll(async () => {
    ntp = await startFakeNtp({ offsetMs: 90_000 });
    h = await startNode();
    const cfgs = await clusterConfigs();
    // The node's time server is the stand-in, as machine.time.servers would name a real one.
    const cfg = cfgs.controlplane.replace(/^machine:\n/m, `machine:\n    time:\n        servers:\n            - 127.0.0.1:${ntp.port}\n`);
    const c = insecureClient(h);
    await apply(c, cfg, Mode.AUTO);
    c.close();
    admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    await eventually(() => version(admin));
  });
  afterAll(async () => {
    admin?.close();
    await h?.stop();
    await ntp?.close();
  });

  const netstat = (req: Partial<m.NetstatRequest>) =>
    admin.unary(MachineService, "Netstat", m.NetstatRequestSchema, m.NetstatResponseSchema, { netns: { hostnetwork: true }, ...req } as never);

  it("lists the node's API listener with its program (netstat --listening --programs --tcp), and connected sockets", async () => {
    const port = Number(h.address.split(":")[1]);
    const res = await netstat({ filter: Filter.LISTENING, feature: { pid: true } as never, l4proto: { tcp: true, tcp6: true } as never });
    const api = res.messages[0].connectrecord.filter((r) => r.localport === port);
    expect(api).toHaveLength(1);
    expect(api[0]).toMatchObject({ l4proto: "tcp", localip: "127.0.0.1", remoteip: "0.0.0.0", remoteport: 0, state: St.LISTEN, process: { pid: process.pid } });
    expect(res.messages[0].connectrecord.every((r) => r.remoteport === 0)).toBe(true);
    // Our own connection to the API is a connected socket, seen from the server side.
    const conn = await netstat({ filter: Filter.CONNECTED, l4proto: { tcp: true, tcp6: true } as never });
    expect(conn.messages[0].connectrecord.some((r) => r.localport === port && r.state === St.ESTABLISHED && r.remoteport > 0)).toBe(true);
    expect(conn.messages[0].connectrecord.every((r) => r.remoteport !== 0)).toBe(true);
    const bad = await netstat({ filter: 7 as Filter }).catch((e) => e);
    expect(bad).toMatchObject({ code: status.INVALID_ARGUMENT, details: "invalid filter: 7" });
  });

  it("queries the configured time server (talosctl time) and a given one (--check), with upstream's errors", async () => {
    const t = await admin.unary(TimeService, "Time", EmptySchema, TimeResponseSchema, {});
    const msg = t.messages[0];
    expect(msg.server).toBe(`127.0.0.1:${ntp.port}`);
    const skew = Number(msg.remotetime!.seconds) - Number(msg.localtime!.seconds);
    expect(skew).toBeGreaterThanOrEqual(88);
    expect(skew).toBeLessThanOrEqual(92);
    const check = await admin.unary(TimeService, "TimeCheck", TimeRequestSchema, TimeResponseSchema, { server: `127.0.0.1:${ntp.port}` });
    expect(check.messages[0].server).toBe(`127.0.0.1:${ntp.port}`);
    expect(ntp.requests).toBe(2);
    const fail = (server: string) => admin.unary(TimeService, "TimeCheck", TimeRequestSchema, TimeResponseSchema, { server }).catch((e) => e);
    expect(await fail("")).toMatchObject({ code: status.INVALID_ARGUMENT, details: "ntp server is required" });
    ntp.set({ stratum: 0, refId: "RATE" });
    expect(await fail(`127.0.0.1:${ntp.port}`)).toMatchObject({ code: status.UNKNOWN, details: "error validating NTP response: kiss of death received: RATE" });
    ntp.set({ stratum: 2, leap: 3 });
    expect((await fail(`127.0.0.1:${ntp.port}`)).details).toBe("error validating NTP response: invalid leap second");
    ntp.set({ leap: 0 });
    expect((await fail("no-such-host.invalid")).details).toBe('error querying NTP server "no-such-host.invalid": lookup no-such-host.invalid: no such host');
  }, 20_000);

  it("refuses to capture on an interface the node does not have", async () => {
    const err = await admin
      .stream(MachineService, "PacketCapture", m.PacketCaptureRequestSchema, DataSchema, { interface: "nope0" })
      .catch((e) => e);
    expect(err).toMatchObject({ code: status.NOT_FOUND, details: 'interface "nope0" not found' });
  });

  it.skipIf(!isRoot)("captures loopback traffic this test sends, as a pcap stream, with a BPF filter (talosctl pcap -i lo)", async () => {
    const sock = createSocket("udp4");
    await new Promise<void>((r) => sock.bind(0, "127.0.0.1", () => r()));
    const dst = (sock.address() as { port: number }).port;
    const payload = Buffer.from(`machined-pcap-${process.pid}`);
    // `tcpdump -dd -y EN10MB udp dst port <dst>`, for IPv4 (ethertype 0x800, protocol 17, port at the UDP header).
    const filter = [
      { op: 0x28, jt: 0, jf: 0, k: 12 },
      { op: 0x15, jt: 0, jf: 6, k: 0x800 },
      { op: 0x30, jt: 0, jf: 0, k: 23 },
      { op: 0x15, jt: 0, jf: 4, k: 17 },
      { op: 0xb1, jt: 0, jf: 0, k: 14 },
      { op: 0x48, jt: 0, jf: 0, k: 16 },
      { op: 0x15, jt: 0, jf: 1, k: dst },
      { op: 0x6, jt: 0, jf: 0, k: 262144 },
      { op: 0x6, jt: 0, jf: 0, k: 0 },
    ];
    const chunks: Buffer[] = [];
    const sender = setInterval(() => sock.send(payload, dst, "127.0.0.1"), 50);
    try {
      await admin.stream(MachineService, "PacketCapture", m.PacketCaptureRequestSchema, DataSchema, { interface: "lo", bpfFilter: filter }, {
        deadlineMs: 1500,
        onMessage: (d) => chunks.push(Buffer.from(d.bytes)),
      }).catch((e: { code: number }) => {
        if (e.code !== status.DEADLINE_EXCEEDED) throw e;
      });
    } finally {
      clearInterval(sender);
      sock.close();
    }
    const pcap = Buffer.concat(chunks);
    expect(pcap.readUInt32LE(0)).toBe(0xa1b2c3d4);
    expect(pcap.readUInt32LE(16)).toBe(4096); // default snap length
    expect(pcap.readUInt32LE(20)).toBe(1); // Ethernet
    const records: Buffer[] = [];
    for (let off = 24; off + 16 <= pcap.length; ) {
      const incl = pcap.readUInt32LE(off + 8);
      records.push(pcap.subarray(off + 16, off + 16 + incl));
      off += 16 + incl;
    }
    expect(records.length).toBeGreaterThan(3);
    // Only what the filter lets through: UDP to our port, carrying our payload.
    for (const r of records) {
      expect(r.readUInt16BE(12)).toBe(0x800);
      expect(r[23]).toBe(17);
      expect(r.readUInt16BE(14 + 20 + 2)).toBe(dst);
      expect(r.subarray(14 + 20 + 8).equals(payload)).toBe(true);
    }
  });
});
