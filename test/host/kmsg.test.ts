import { constants, accessSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  formatKmsgRecord, formatRFC3339Nano, parseKmsgRecord, readKmsg, unescapeKmsg,
} from "../../src/host/kmsg.js";

const RECORDS: string[] = JSON.parse(readFileSync(new URL("fixtures/kmsg-records.json", import.meta.url), "utf8"));
// Records were read from this machine's /dev/kmsg; bytes above 0x7f are escaped by the kernel.
const raw = (s: string) => Buffer.from(s, "latin1");
const BOOT = BigInt(Date.UTC(2026, 10, 29, 16, 23, 57)) * 1_000_000n;

describe("kmsg parsing", () => {
  it("parses the prefix fields", () => {
    const r = parseKmsgRecord(raw(RECORDS[2]));
    expect(r).toMatchObject({ facility: 0, priority: 4, seq: 2, usec: 0, flags: "-" });
    expect(r.message).toBe("[Firmware Bug]: TSC doesn't count with P0 frequency!");
    expect(r.text).toBe("[Firmware Bug]: TSC doesn't count with P0 frequency!\n");
  });

  it("keeps continuation lines in the text and exposes them as a dictionary", () => {
    const r = parseKmsgRecord(raw(RECORDS[3]));
    expect(r.message).toBe("acpi PNP0A08:00: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments MSI HPX-Type3]");
    expect(r.dict).toEqual({ SUBSYSTEM: "acpi", DEVICE: "+acpi:PNP0A08:00" });
    expect(r.text.endsWith("\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A08:00\n")).toBe(true);
  });

  it("decodes \\xNN escapes, \\\\ and UTF-8 byte sequences", () => {
    expect(parseKmsgRecord(raw(RECORDS[4])).message).toBe("rcu: \tRCU restricting CPUs from NR_CPUS=256 to nr_cpu_ids=2.");
    expect(parseKmsgRecord(raw(RECORDS[7])).message).toBe("NET: Registered protocol family \\10\\ in µs");
  });

  it("drops malformed escapes like upstream", () => {
    // Only the byte right after a bad escape is swallowed: "\\xZZ" leaves the second Z.
    expect(unescapeKmsg(raw("a\\qb\\xZZc\\x4")).toString("latin1")).toBe("abZc");
  });

  it("reads the caller field and userspace facilities", () => {
    expect(parseKmsgRecord(raw(RECORDS[6])).caller).toBe("T148");
    expect(parseKmsgRecord(raw(RECORDS[8]))).toMatchObject({ facility: 1, priority: 6 });
  });

  it("rejects records without a prefix", () => {
    expect(() => parseKmsgRecord(raw("no prefix here"))).toThrow(/prefix/);
    expect(() => parseKmsgRecord(raw("x,1,2;bad"))).toThrow(/prefix/);
  });
});

describe("kmsg formatting", () => {
  it("formats Go RFC3339Nano (trailing zeros trimmed)", () => {
    expect(formatRFC3339Nano(BOOT)).toBe("2026-11-29T16:23:57Z");
    expect(formatRFC3339Nano(BOOT + 123_456_000n)).toBe("2026-11-29T16:23:57.123456Z");
    expect(formatRFC3339Nano(BOOT + 5_140_900_000n)).toBe("2026-11-29T16:24:02.1409Z");
    expect(formatRFC3339Nano(BOOT + 1n)).toBe("2026-11-29T16:23:57.000000001Z");
  });

  it("renders records exactly like Talos's Dmesg", () => {
    const fmt = (i: number) => formatKmsgRecord(parseKmsgRecord(raw(RECORDS[i])), BOOT);
    expect(fmt(0)).toBe(
      "kern:  notice: [2026-11-29T16:23:57Z]: Linux version 6.18.44-fc-v782 (builder@sandboxing) (gcc (GCC) 15.3.0, GNU ld (GNU Binutils) 2.46) #1 SMP PREEMPT_DYNAMIC @0\n",
    );
    expect(fmt(2)).toBe("kern: warning: [2026-11-29T16:23:57Z]: [Firmware Bug]: TSC doesn't count with P0 frequency!\n");
    expect(fmt(3)).toBe(
      "kern:    info: [2026-11-29T16:23:57.211428Z]: acpi PNP0A08:00: _OSC: OS supports [ExtendedConfig ASPM ClockPM Segments MSI HPX-Type3]\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A08:00\n",
    );
    expect(fmt(7)).toBe("kern:     err: [2026-11-29T16:24:02.140901Z]: NET: Registered protocol family \\10\\ in µs\n");
    expect(fmt(8)).toBe("user:    info: [2026-11-29T16:24:04Z]: machined[1]: hello from userspace\n");
  });

  it("adds the newline a record might lack", () => {
    expect(formatKmsgRecord(parseKmsgRecord(raw("7,1,0,-;x")), BOOT)).toBe("kern:   debug: [2026-11-29T16:23:57Z]: x\n");
  });
});

describe("kmsg reader", () => {
  it("says plainly when the kernel log cannot be opened", async () => {
    const it = readKmsg({ path: "/nonexistent/kmsg", bootTimeNs: 0n });
    await expect(it.next()).rejects.toThrow(/kernel log is not available: \/nonexistent\/kmsg does not exist/);
  });

  let readable = true;
  try {
    accessSync("/dev/kmsg", constants.R_OK);
  } catch (err) {
    readable = false;
    console.log(`skipping live /dev/kmsg tests: ${(err as Error).message}`);
  }

  it.skipIf(!readable)("reads this machine's kernel log to the end", async () => {
    const lines: string[] = [];
    for await (const line of readKmsg()) lines.push(line);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(l).toMatch(/^[a-z0-9]+: [ a-z]{7}: \[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\]: [^]*\n$/);
    // The first records are stamped at boot, which must be in the past.
    const ts = /\[([^\]]+)\]/.exec(lines[0])![1];
    expect(Date.parse(ts)).toBeLessThanOrEqual(Date.now());
  });

  it.skipIf(!readable)("follow mode streams the backlog and stops on abort", async () => {
    const ac = new AbortController();
    let n = 0;
    const started = Date.now();
    setTimeout(() => ac.abort(), 600);
    for await (const _ of readKmsg({ follow: true, signal: ac.signal, pollIntervalMs: 50 })) n++;
    expect(n).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it.skipIf(!readable)("tail mode skips the backlog", async () => {
    const ac = new AbortController();
    const lines: string[] = [];
    setTimeout(() => ac.abort(), 400);
    for await (const l of readKmsg({ follow: true, tail: true, signal: ac.signal, pollIntervalMs: 50 })) lines.push(l);
    // Nothing is written to the kernel log by this test, so a quiet system yields (almost) nothing.
    expect(lines.length).toBeLessThan(5);
  });
});
