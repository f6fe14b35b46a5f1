import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MemInfoSchema } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { parseMeminfo, readMeminfo } from "../../../src/host/proc/meminfo.js";

const ROOT = fileURLToPath(new URL("../fixtures/x86", import.meta.url));

describe("meminfo", () => {
  it("maps every MemInfo field from a captured /proc/meminfo, in kB", async () => {
    const m = await readMeminfo({ root: ROOT });
    expect(Object.keys(m)).toHaveLength(48);
    expect(m.memtotal).toBe(24683656n);
    expect(m.memavailable).toBe(22818096n);
    expect(m.activeanon).toBe(1700n);
    expect(m.inactivefile).toBe(2316164n);
    expect(m.nfsunstable).toBe(0n);
    expect(m.committedas).toBe(1823732n);
    expect(m.vmalloctotal).toBe(34359738367n);
    expect(m.hugepagesize).toBe(2048n);
    expect(m.directmap1g).toBe(25165824n);
    // CmaTotal is absent from this kernel's file: it stays zero instead of failing.
    expect(m.cmatotal).toBe(0n);
  });

  it("is a valid MemInfo init shape that survives the wire", () => {
    const m = parseMeminfo("MemTotal: 100 kB\nHugePages_Total: 3\nDirectMap2M: 7 kB\nBogus: 9 kB\n");
    const msg = fromBinary(MemInfoSchema, toBinary(MemInfoSchema, create(MemInfoSchema, m)));
    expect(msg.memtotal).toBe(100n);
    expect(msg.hugepagestotal).toBe(3n);
    expect(msg.directmap2m).toBe(7n);
  });

  it("reads this machine's memory", async () => {
    const m = await readMeminfo();
    expect(m.memtotal).toBeGreaterThan(0n);
    expect(m.memfree).toBeLessThanOrEqual(m.memtotal);
  });
});
