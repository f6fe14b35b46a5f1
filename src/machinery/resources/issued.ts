/**
 * When a controller re-issues certificates. Reconciles run on every input event, so issuing each time would
 * rotate keys on unrelated changes; instead the output carries a digest of what it was issued from and when it
 * must be renewed, and is re-issued only when that digest changes or the renewal time has come.
 */
import { createHash } from "node:crypto";
import type { Resource } from "./resource.js";

export const INPUTS_ANNOTATION = "machined.dev/issued-from";
export const RENEW_ANNOTATION = "machined.dev/renew-at";

export function digest(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 32);
}

/** undefined: the existing output is current; otherwise why it must be issued again. */
export function reissueReason(existing: Resource | undefined, inputs: string, now = Date.now()): string | undefined {
  if (!existing) return "not issued yet";
  if (existing.metadata.annotations[INPUTS_ANNOTATION] !== inputs) return "inputs changed";
  const renewAt = Date.parse(existing.metadata.annotations[RENEW_ANNOTATION] ?? "");
  if (!Number.isFinite(renewAt) || renewAt <= now) return "renewal due";
  return undefined;
}

/** Annotations for a freshly issued output, renewed after `renewAfterMs`. */
export function issuedAnnotations(inputs: string, renewAfterMs: number, now = Date.now()): Record<string, string> {
  return { [INPUTS_ANNOTATION]: inputs, [RENEW_ANNOTATION]: new Date(now + renewAfterMs).toISOString() };
}

/** Timers fire at once beyond 2^31-1 ms (~24.8 days): a longer wait is cut to that, and the reconcile then looks again. */
export const MAX_REQUEUE_MS = 2_147_483_647;

/** A requeue delay a timer can hold. */
export function requeueAfter(ms: number): number {
  return Math.min(Math.max(0, ms), MAX_REQUEUE_MS);
}

/** How long until the existing output is due for renewal (for requeueAfterMs). */
export function msUntilRenewal(existing: Resource | undefined, now = Date.now()): number | undefined {
  const renewAt = Date.parse(existing?.metadata.annotations[RENEW_ANNOTATION] ?? "");
  return Number.isFinite(renewAt) ? requeueAfter(renewAt - now) : undefined;
}
