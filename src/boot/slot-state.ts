/** The A/B bookkeeping kept in META (our tags 0xA0..0xA3 plus Talos's Upgrade tag), read and written as one unit. */
import type { Meta } from "./meta.js";
import { MetaTag } from "./meta-tags.js";
import type { Slot } from "./layout-plan.js";

export type UpgradeResult = "installed" | "pending" | "success" | "failed" | "rolled-back";

export interface UpgradeRecord {
  from: Slot | null;
  to: Slot;
  osVersion: string;
  image?: string;
  generation: number;
  started: string;
  finished?: string;
  result: UpgradeResult;
  reason?: string;
}

export interface SlotState {
  lastKnownGood?: Slot;
  pending?: Slot;
  triesLeft?: number;
  record?: UpgradeRecord;
}

const asSlot = (v?: string): Slot | undefined => (v === "A" || v === "B" ? v : undefined);

export function otherSlot(s: Slot): Slot {
  return s === "A" ? "B" : "A";
}

export function readSlotState(meta: Meta): SlotState {
  let record: UpgradeRecord | undefined;
  const raw = meta.getString(MetaTag.UpgradeRecord);
  if (raw) {
    try {
      record = JSON.parse(raw) as UpgradeRecord;
    } catch {
      record = undefined; // a record we cannot parse must not block boot; it is informational
    }
  }
  const tries = meta.getString(MetaTag.TriesLeft);
  return {
    lastKnownGood: asSlot(meta.getString(MetaTag.LastKnownGoodSlot)),
    pending: asSlot(meta.getString(MetaTag.PendingSlot)),
    triesLeft: tries !== undefined && /^\d+$/.test(tries) ? Number(tries) : undefined,
    record,
  };
}

/** Stages the full state in memory; the caller flushes once so all tags change together. */
export function setSlotState(meta: Meta, s: SlotState): void {
  const put = (tag: number, v: string | undefined) => (v === undefined ? meta.delete(tag) : meta.set(tag, v));
  put(MetaTag.LastKnownGoodSlot, s.lastKnownGood);
  put(MetaTag.PendingSlot, s.pending);
  put(MetaTag.TriesLeft, s.triesLeft === undefined ? undefined : String(s.triesLeft));
  put(MetaTag.UpgradeRecord, s.record ? JSON.stringify(s.record) : undefined);
  // Talos semantics: the Upgrade tag names the label to revert to while an upgrade is unconfirmed
  put(MetaTag.Upgrade, s.pending ? s.lastKnownGood : undefined);
}
