/**
 * etcd.ConfigController (control planes): the etcd settings of the machine config (cluster.etcd: image, extra
 * flags, advertised and listen subnets, `!`-prefixed ones as exclusions) as EtcdConfig `etcd`.
 */
import { DEFAULT_ETCD_VERSION, ETCD_IMAGE } from "../../machinery/generate/constants.js";
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { ETCD_ID, EtcdConfigType, type ArgValuesMap, type EtcdConfigSpec } from "../../machinery/resources/types/etcd.js";
import { pointer } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";

export function etcdConfigController(): Controller {
  const ptr = pointer(EtcdConfigType, ETCD_ID);
  return {
    name: "etcd.ConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: EtcdConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.cluster || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      const etcd = cfg.cluster.etcd ?? {};
      const [advValid, advExclude] = splitSubnets(etcd.advertisedSubnets);
      const [listenValid, listenExclude] = splitSubnets(etcd.listenSubnets);
      const spec: EtcdConfigSpec = {
        advertiseValidSubnets: advValid.length ? advValid : undefined,
        advertiseExcludeSubnets: advExclude,
        listenValidSubnets: listenValid.length ? listenValid : undefined,
        listenExcludeSubnets: listenExclude,
        image: etcd.image || `${ETCD_IMAGE}:${DEFAULT_ETCD_VERSION}`,
        extraArgs: argValues(etcd.extraArgs),
      };
      ctx.apply({ ...ptr, spec });
    },
  };
}

function splitSubnets(list: readonly string[] | undefined): [string[], string[]] {
  const valid: string[] = [];
  const exclude: string[] = [];
  for (const s of list ?? []) (s.startsWith("!") ? exclude : valid).push(s.replace(/^!/, ""));
  return [valid, exclude];
}

export function argValues(raw: Readonly<Record<string, string | readonly string[]>> | undefined): ArgValuesMap {
  const out: ArgValuesMap = {};
  for (const [k, v] of Object.entries(raw ?? {})) out[k] = { values: typeof v === "string" ? [v] : [...v] };
  return out;
}
