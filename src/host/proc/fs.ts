/**
 * Shared plumbing for the /proc and /sys readers: every reader resolves its paths under an injectable
 * root so tests can point it at a fixture tree instead of the live host.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Message } from "@bufbuild/protobuf";

export interface RootOptions {
  /** Filesystem root holding `proc/` and `sys/`; defaults to "/". */
  root?: string;
}

/** Absolute path of `rel` (e.g. "proc/meminfo") under the configured root. */
export function hostPath(opts: RootOptions | undefined, ...rel: string[]): string {
  return path.join(opts?.root ?? "/", ...rel);
}

export async function readText(opts: RootOptions | undefined, ...rel: string[]): Promise<string> {
  return readFile(hostPath(opts, ...rel), "utf8");
}

/**
 * A protobuf-es message as a plain object: every field present, without `$typeName`/`$unknown` and
 * without the per-node `metadata` (the API layer fills that). Assignable to the message's
 * MessageInitShape, so handlers can hand these objects to `create()` unchanged.
 */
export type Plain<T> = T extends Message
  ? { [K in keyof T as K extends "$typeName" | "$unknown" | "metadata" ? never : K]: Plain<T[K]> }
  : T extends readonly (infer U)[]
    ? Plain<U>[]
    : T;

/** Parses a kernel decimal counter as a uint64; garbage becomes 0 rather than NaN. */
export function u64(s: string | undefined): bigint {
  if (s === undefined || !/^\d+$/.test(s)) return 0n;
  return BigInt(s);
}
