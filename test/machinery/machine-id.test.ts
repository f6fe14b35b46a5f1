import { describe, expect, it } from "vitest";
import { base62 } from "../../src/controllers/cluster/node-identity.js";
import { base62Decode, machineIdFromNodeId } from "../../src/machinery/machine-id.js";

describe("machine-id from the node identity", () => {
  it("decodes what the node identity encodes, and takes the first 16 bytes in hex", () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => (i * 37 + 11) & 0xff);
    const id = base62(bytes);
    expect([...base62Decode(id)]).toEqual([...bytes]);
    expect(machineIdFromNodeId(id)).toBe(Buffer.from(bytes.subarray(0, 16)).toString("hex"));
    expect(machineIdFromNodeId(id)).toMatch(/^[0-9a-f]{32}$/);
  });

  it("is stable for one id and differs between ids", () => {
    const a = base62(Uint8Array.from({ length: 32 }, (_, i) => i + 1));
    const b = base62(Uint8Array.from({ length: 32 }, (_, i) => i + 2));
    expect(machineIdFromNodeId(a)).toBe(machineIdFromNodeId(a));
    expect(machineIdFromNodeId(a)).not.toBe(machineIdFromNodeId(b));
  });

  it("names the bad character, and refuses an id too short for 16 bytes", () => {
    expect(() => machineIdFromNodeId("abc-def")).toThrow(/invalid base62 character "-"/);
    expect(() => machineIdFromNodeId("zz")).toThrow(/too short for a machine id/);
  });
});
