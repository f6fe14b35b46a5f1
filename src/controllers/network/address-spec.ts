/**
 * network.AddressSpecController (only when machined owns the network): adds the AddressSpecs' addresses
 * the kernel lacks and removes the ones it added (or found already matching a spec) once their spec is
 * gone. Addresses nobody asked for are left alone, as upstream does.
 */
import type { Controller } from "../../state/runtime/index.js";
import { addAddress, removeAddress, type NetTarget } from "../../host/net/apply.js";
import { AddressSpecType, AddressStatusType, LinkStatusType, type AddressSpecSpec } from "../../machinery/resources/types/network.js";
import { readAll } from "../../machinery/resources/read.js";
import { bumpRefresh, refreshOutput } from "./refresh.js";
import { NETWORK_NS, type NetworkEnv } from "./shared.js";

export function addressSpecController(env: NetworkEnv & { target: NetTarget }): Controller {
  const t = env.target;
  /** id → spec of addresses we manage (added, or found present for a spec). */
  const owned = new Map<string, AddressSpecSpec>();
  return {
    name: "network.AddressSpecController",
    inputs: [
      { namespace: NETWORK_NS, type: AddressSpecType.type, kind: "strong" },
      { namespace: NETWORK_NS, type: AddressStatusType.type, kind: "weak" },
      { namespace: NETWORK_NS, type: LinkStatusType.type, kind: "weak" },
    ],
    outputs: [refreshOutput],
    async reconcile(ctx) {
      const links = new Set(ctx.list(NETWORK_NS, LinkStatusType.type).map((r) => r.metadata.id));
      const present = new Set(ctx.list(NETWORK_NS, AddressStatusType.type).map((r) => r.metadata.id));
      const specs = readAll(ctx, AddressSpecType);
      let changed = false;
      let pending = false;

      // Removals first, so an address moving between links is not briefly on both.
      const wanted = new Set(specs.map((r) => r.metadata.id));
      for (const [id, spec] of [...owned]) {
        if (wanted.has(id)) continue;
        try {
          await removeAddress(t, spec.linkName, spec.address);
          owned.delete(id);
          changed = true;
          ctx.log("removed address", { address: spec.address, link: spec.linkName });
        } catch (err) {
          pending = true;
          ctx.log("removing address failed", { id, error: String(err) });
        }
      }

      for (const r of specs) {
        const spec = r.spec;
        if (!links.has(spec.linkName)) continue; // retried when the link shows up
        owned.set(r.metadata.id, spec);
        if (present.has(r.metadata.id)) continue;
        try {
          await addAddress(t, spec.linkName, spec.address);
          changed = true;
          ctx.log("added address", { address: spec.address, link: spec.linkName });
        } catch (err) {
          pending = true;
          ctx.log("adding address failed", { id: r.metadata.id, error: String(err) });
        }
      }
      if (changed) bumpRefresh(ctx, "address");
      return pending ? { requeueAfterMs: env.retryMs } : undefined;
    },
  };
}
