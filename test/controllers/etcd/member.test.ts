/** etcd.MemberController follows the etcd service's health. */
import { describe, expect, it } from "vitest";
import { ETCD_NS, EtcdMemberType } from "../../../src/machinery/resources/types/etcd.js";
import { RUNTIME_NS, ServiceType } from "../../../src/machinery/resources/types/runtime.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { etcdMemberController, formatMemberID } from "../../../src/controllers/etcd/member.js";
import { eventually, put, settle, spec, startRuntime } from "../runtime/harness.js";

describe("etcd.MemberController", () => {
  it("formats member ids as 16 hex digits", () => {
    expect(formatMemberID(0xabcn)).toBe("0000000000000abc");
    expect(formatMemberID("8e9e05c52164694d")).toBe("8e9e05c52164694d");
  });

  it("publishes the local member id while etcd is running and healthy", async () => {
    const s = new InMemoryState();
    let calls = 0;
    startRuntime(s, [etcdMemberController({ memberId: async () => (calls++, 0x1234n) })]);
    await settle();
    expect(calls).toBe(0);
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: false, unknown: true });
    await settle();
    expect(spec(s, ETCD_NS, EtcdMemberType.type, "local")).toBeUndefined();
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false });
    await eventually(() => !!spec(s, ETCD_NS, EtcdMemberType.type, "local"), 2000, "member");
    expect(spec(s, ETCD_NS, EtcdMemberType.type, "local")).toEqual({ memberID: "0000000000001234" });
    s.destroy({ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd" }, "");
    await eventually(() => !spec(s, ETCD_NS, EtcdMemberType.type, "local"), 2000, "member gone");
  });
});
