/**
 * etcd.MemberController: the local etcd member id (`etcd`/`local`) while the etcd service is running
 * and healthy; destroyed otherwise. The id comes from an injected `memberId()` because the etcd
 * client belongs to the supervisor (EtcdClient); it is formatted like Talos (16 hex digits).
 */
import { ETCD_NS, EtcdMemberType } from "../../machinery/resources/types/etcd.js";
import { read } from "../../machinery/resources/read.js";
import { RUNTIME_NS, ServiceType } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export interface EtcdMemberOptions {
  /** The local member id, e.g. from `EtcdClient.status().memberId`. */
  memberId: () => Promise<bigint | number | string>;
}

export function formatMemberID(id: bigint | number | string): string {
  const n = typeof id === "string" ? BigInt(id.startsWith("0x") ? id : `0x${id}`) : BigInt(id);
  return n.toString(16).padStart(16, "0");
}

export function etcdMemberController(opts: EtcdMemberOptions): Controller {
  const ptr = { namespace: ETCD_NS, type: EtcdMemberType.type, id: "local" };
  return {
    name: "etcd.MemberController",
    inputs: [{ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd", kind: "weak" }],
    outputs: [{ type: EtcdMemberType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const svc = read(ctx, ServiceType, "etcd");
      const spec = svc?.spec;
      if (!svc || svc.metadata.phase !== "running" || !spec?.healthy) {
        ctx.destroy(ptr);
        return;
      }
      const id = await opts.memberId();
      ctx.apply({ ...ptr, spec: { memberID: formatMemberID(id) } });
    },
  };
}
