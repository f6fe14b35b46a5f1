import { describe, expect, it } from "vitest";
import { decodeServerReply, encodeClientMessage, MessageType } from "../../../src/machinery/net/dhcp4.js";

const MAC = "52:54:00:12:34:56";

/** A server's BOOTREPLY as dnsmasq builds one: header, magic cookie, options. */
function reply(type: number, xid: number, opts: number[]): Buffer {
  const head = Buffer.alloc(236);
  head[0] = 2;
  head[1] = 1;
  head[2] = 6;
  head.writeUInt32BE(xid, 4);
  Buffer.from([10, 5, 0, 11]).copy(head, 16); // yiaddr
  Buffer.from(MAC.split(":").map((h) => parseInt(h, 16))).copy(head, 28);
  return Buffer.concat([head, Buffer.from([99, 130, 83, 99, 53, 1, type, ...opts, 255])]);
}

describe("DHCPv4 messages", () => {
  it("encodes a DISCOVER: BOOTREQUEST, broadcast flag, chaddr, message type, client id, parameter list", () => {
    const b = encodeClientMessage({ type: MessageType.DISCOVER, xid: 0x01020304, mac: MAC, hostname: "cp-1" });
    expect(b.length).toBeGreaterThanOrEqual(300);
    expect([b[0], b[1], b[2]]).toEqual([1, 1, 6]);
    expect(b.readUInt32BE(4)).toBe(0x01020304);
    expect(b.readUInt16BE(10)).toBe(0x8000);
    expect([...b.subarray(28, 34)]).toEqual([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
    expect([...b.subarray(236, 243)]).toEqual([99, 130, 83, 99, 53, 1, 1]);
    const opts = b.subarray(240);
    expect(opts.includes(Buffer.from([61, 7, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56]))).toBe(true);
    expect(opts.includes(Buffer.from([12, 4, ...Buffer.from("cp-1")]))).toBe(true);
  });

  it("encodes a REQUEST naming the offered address and the server", () => {
    const b = encodeClientMessage({ type: MessageType.REQUEST, xid: 7, mac: MAC, requestedIp: "10.5.0.11", serverId: "10.5.0.1" });
    const opts = b.subarray(240);
    expect(opts.includes(Buffer.from([53, 1, 3]))).toBe(true);
    expect(opts.includes(Buffer.from([50, 4, 10, 5, 0, 11]))).toBe(true);
    expect(opts.includes(Buffer.from([54, 4, 10, 5, 0, 1]))).toBe(true);
  });

  it("refuses a bad MAC or address with the value in the message", () => {
    expect(() => encodeClientMessage({ type: MessageType.DISCOVER, xid: 1, mac: "52:54:00" })).toThrow(/invalid MAC address "52:54:00"/);
    expect(() => encodeClientMessage({ type: MessageType.REQUEST, xid: 1, mac: MAC, requestedIp: "10.5.0.300" })).toThrow(/invalid IPv4 address "10.5.0.300"/);
  });

  it("decodes an ACK: address and prefix, routers, DNS, domain, MTU, lease, server", () => {
    const r = decodeServerReply(
      reply(MessageType.ACK, 42, [1, 4, 255, 255, 255, 0, 3, 4, 10, 5, 0, 1, 6, 8, 10, 5, 0, 1, 9, 9, 9, 9, 15, 3, ...Buffer.from("lab"), 26, 2, 5, 220, 51, 4, 0xff, 0xff, 0xff, 0xff, 54, 4, 10, 5, 0, 1]),
    );
    expect(r).toEqual({
      type: MessageType.ACK,
      xid: 42,
      mac: MAC,
      yiaddr: "10.5.0.11",
      serverId: "10.5.0.1",
      prefixLength: 24,
      routers: ["10.5.0.1"],
      dnsServers: ["10.5.0.1", "9.9.9.9"],
      domain: "lab",
      hostname: "",
      mtu: 1500,
      leaseSeconds: 0xffffffff,
    });
  });

  it("ignores what is not a well-formed reply (requests, short or truncated packets)", () => {
    expect(decodeServerReply(encodeClientMessage({ type: MessageType.DISCOVER, xid: 1, mac: MAC }))).toBeUndefined();
    expect(decodeServerReply(Buffer.alloc(100))).toBeUndefined();
    const truncated = reply(MessageType.OFFER, 1, [6, 8, 10, 5]);
    expect(decodeServerReply(truncated.subarray(0, truncated.length - 1))).toBeUndefined();
  });
});
