/**
 * Reading the active machine config from the store. The MachineConfig resource (`config`/`v1alpha1`)
 * carries the document text; parsing it is not free, so the last parse is cached by text.
 */
import { loadConfig, type MachineConfig } from "../../machinery/config/index.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType, type MachineTypeName } from "../../machinery/resources/types/config.js";
import type { Input, ReconcileContext } from "../../state/runtime/index.js";

export const ACTIVE_CONFIG_ID = "v1alpha1";

/** Weak input on the active config, for controllers derived from it. */
export const activeConfigInput: Input = { namespace: CONFIG_NS, type: MachineConfigType.type, id: ACTIVE_CONFIG_ID, kind: "weak" };
export const machineTypeInput: Input = { namespace: CONFIG_NS, type: MachineTypeType.type, id: "machine-type", kind: "weak" };

let cache: { text: string; cfg: MachineConfig } | undefined;

type Reader = Pick<ReconcileContext, "get">;

/** The active config, or undefined in maintenance mode. Throws if the stored text does not parse. */
export function activeConfig(ctx: Reader): MachineConfig | undefined {
  const r = ctx.get({ namespace: CONFIG_NS, type: MachineConfigType.type, id: ACTIVE_CONFIG_ID });
  if (!r) return undefined;
  const text = r.spec as string;
  if (cache?.text !== text) cache = { text, cfg: loadConfig(text) };
  return cache.cfg;
}

/** The MachineType resource's value, or undefined when not published yet. */
export function machineType(ctx: Reader): MachineTypeName | undefined {
  return ctx.get({ namespace: CONFIG_NS, type: MachineTypeType.type, id: "machine-type" })?.spec as MachineTypeName | undefined;
}

export function isControlPlane(t: MachineTypeName | undefined): boolean {
  return t === "controlplane" || t === "init";
}
