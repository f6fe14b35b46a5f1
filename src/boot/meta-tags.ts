/**
 * META tag numbers. 6..17 are upstream Talos's (pkg/machinery/meta) and keep their meaning so talosctl
 * `meta write/delete` and Talos tooling interoperate. Ours live at 0xA0.. : Talos reads tags as a byte, so they
 * must stay below 256, and nothing upstream uses that range.
 */
export const MetaTag = {
  /** Talos: previous boot label while an upgrade is unconfirmed ("A"/"B"). */
  Upgrade: 6,
  StagedUpgradeImageRef: 7,
  StagedUpgradeInstallOptions: 8,
  StateEncryptionConfig: 9,
  MetalNetworkPlatformConfig: 10,
  DownloadURLCode: 11,
  UserReserved1: 12,
  UserReserved2: 13,
  UserReserved3: 14,
  UUIDOverride: 15,
  UniqueMachineToken: 16,
  DiskImageBootloader: 17,

  /** machined: slot that last reached Ready ("A"/"B"). */
  LastKnownGoodSlot: 0xa0,
  /** machined: slot staged and on trial, not yet blessed. */
  PendingSlot: 0xa1,
  /** machined: boot attempts granted to the pending slot (decimal). */
  TriesLeft: 0xa2,
  /** machined: JSON UpgradeRecord of the last install/upgrade/rollback. */
  UpgradeRecord: 0xa3,
} as const;

export type MetaTagName = keyof typeof MetaTag;

/** Tag 0 terminates the record list and Talos truncates tags to a byte. */
export function assertValidTag(tag: number): void {
  if (!Number.isInteger(tag) || tag < 1 || tag > 255) throw new RangeError(`META tag must be an integer in 1..255, got ${tag}`);
}
