/**
 * What the install/upgrade machinery shows as resources:
 *  - MetaKeys (runtime/0x%02x): every META tag, so `talosctl get metakeys` shows the last-known-good slot
 *    (0xa0), the slot on trial (0xa1), its tries (0xa2) and the upgrade record (0xa3, JSON);
 *  - Diagnostics (runtime/upgrade-fallback): an upgrade that did not come up and was fallen back from, for as
 *    long as META's upgrade record says so (the next upgrade or rollback replaces the record and clears it).
 * Written directly under our own owner: no controller runtime runs these in local mode.
 */
import { newResource } from "../../machinery/resources/resource.js";
import { MetaKeyType } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import { DiagnosticType, type DiagnosticSpec } from "../../machinery/resources/types/security.js";
import type { UpgradeRecord } from "../../boot/slots.js";
import type { State } from "../../state/types.js";

export const OWNER = "lifecycle.InstallController";
export const FALLBACK_DIAGNOSTIC = "upgrade-fallback";
export const NO_BOOT_DIAGNOSTIC = "no-bootable-slot";

export const metaKeyId = (tag: number) => `0x${tag.toString(16).padStart(2, "0")}`;

function sync(state: State, type: string, want: Map<string, unknown>): void {
  for (const r of state.list(RUNTIME_NS, type)) {
    if (r.metadata.owner === OWNER && !want.has(r.metadata.id)) state.destroy(r.metadata, OWNER);
  }
  for (const [id, spec] of want) {
    const cur = state.get({ namespace: RUNTIME_NS, type, id });
    if (cur && cur.metadata.owner !== OWNER) continue; // someone else publishes it; do not fight
    state.apply(newResource({ namespace: RUNTIME_NS, type, id }, spec, OWNER), OWNER);
  }
}

export function publishMetaKeys(state: State, tags: { tag: number; value: Buffer }[]): void {
  sync(state, MetaKeyType.type, new Map(tags.map((t) => [metaKeyId(t.tag), { value: t.value.toString("utf8") }])));
}

export function fallbackDiagnostic(rec: UpgradeRecord): DiagnosticSpec {
  return {
    message: `upgrade to ${rec.osVersion} in slot ${rec.to} did not come up; the machine fell back to slot ${rec.from ?? "?"}`,
    details: [
      rec.reason ?? "no reason recorded",
      `image: ${rec.image ?? "unknown"}`,
      `started: ${rec.started}`,
      `fell back: ${rec.finished ?? "unknown"}`,
      "run `talosctl upgrade` with a fixed image to try again",
    ],
  };
}

export function publishDiagnostics(state: State, d: { record?: UpgradeRecord; noBoot?: string }): void {
  const want = new Map<string, DiagnosticSpec>();
  if (d.record?.result === "failed") want.set(FALLBACK_DIAGNOSTIC, fallbackDiagnostic(d.record));
  if (d.noBoot) want.set(NO_BOOT_DIAGNOSTIC, { message: "no slot on the system disk could be booted", details: [d.noBoot] });
  sync(state, DiagnosticType.type, want);
}
