/**
 * network.LinkSpecController (only when machined owns the network): makes the kernel's links match the
 * LinkSpecs: creates VLAN links, brings links up and sets their MTU. Links that do not exist (yet) are
 * retried when LinkStatus shows them. Logical links it created are deleted when their spec goes.
 */
import type { Controller } from "../../state/runtime/index.js";
import { createVlan, deleteLink, setLinkMtu, setLinkUp, type NetTarget } from "../../host/net/apply.js";
import { LinkSpecType, LinkStatusType } from "../../machinery/resources/types/network.js";
import { readAll } from "../../machinery/resources/read.js";
import { bumpRefresh, refreshOutput } from "./refresh.js";
import { NETWORK_NS, type NetworkEnv } from "./shared.js";

export function linkSpecController(env: NetworkEnv & { target: NetTarget }): Controller {
  const t = env.target;
  /** Logical links we created, so we delete only those. */
  const created = new Set<string>();
  return {
    name: "network.LinkSpecController",
    inputs: [
      { namespace: NETWORK_NS, type: LinkSpecType.type, kind: "strong" },
      { namespace: NETWORK_NS, type: LinkStatusType.type, kind: "weak" },
    ],
    outputs: [refreshOutput],
    async reconcile(ctx) {
      const status = new Map(readAll(ctx, LinkStatusType).map((r) => [r.metadata.id, r.spec]));
      const specs = readAll(ctx, LinkSpecType).map((r) => r.spec);
      let changed = false;
      let pending = false;
      const run = async (what: string, fields: Record<string, unknown>, fn: () => Promise<void>) => {
        try {
          await fn();
          changed = true;
        } catch (err) {
          pending = true;
          ctx.log(`${what} failed`, { ...fields, error: String(err) });
        }
      };
      for (const spec of specs) {
        const cur = status.get(spec.name);
        if (!cur) {
          if (spec.logical && spec.kind === "vlan" && spec.parentName && spec.vlan && status.has(spec.parentName)) {
            await run("creating vlan", { link: spec.name }, async () => {
              await createVlan(t, spec.parentName!, spec.name, spec.vlan!.vlanID);
              created.add(spec.name);
            });
          }
          continue; // applied once LinkStatus shows it
        }
        if (spec.mtu && cur.mtu !== spec.mtu) await run("setting mtu", { link: spec.name, mtu: spec.mtu }, () => setLinkMtu(t, spec.name, spec.mtu));
        const up = cur.flags.split(",").includes("UP");
        if (spec.up !== up) await run("setting link state", { link: spec.name, up: spec.up }, () => setLinkUp(t, spec.name, spec.up));
      }
      const wanted = new Set(specs.map((s) => s.name));
      for (const name of [...created]) {
        if (wanted.has(name)) continue;
        await run("deleting link", { link: name }, async () => {
          await deleteLink(t, name);
          created.delete(name);
        });
      }
      if (changed) bumpRefresh(ctx, "link");
      return pending ? { requeueAfterMs: env.retryMs } : undefined;
    },
  };
}
