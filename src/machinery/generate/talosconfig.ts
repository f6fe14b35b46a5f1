/**
 * talosconfig: the client file talosctl reads. `ca`, `crt`, `key` are base64 of PEM text; the key keeps its
 * `ED25519 PRIVATE KEY` label (talosctl's Go TLS stack loads it as is).
 */
import { stringify } from "yaml";
import { toBase64Pem } from "../pki/pem.js";

export interface TalosconfigInput {
  contextName: string;
  /** `gen config` writes an empty list; users then run `talosctl config endpoint`. */
  endpoints?: string[];
  nodes?: string[];
  caPem: string;
  crtPem: string;
  keyPem: string;
}

export function talosconfigDocument(input: TalosconfigInput): Record<string, unknown> {
  const ctx: Record<string, unknown> = { endpoints: input.endpoints ?? [] };
  // nodes is omitempty upstream
  if (input.nodes?.length) ctx.nodes = input.nodes;
  ctx.ca = toBase64Pem(input.caPem);
  ctx.crt = toBase64Pem(input.crtPem);
  ctx.key = toBase64Pem(input.keyPem);
  return { context: input.contextName, contexts: { [input.contextName]: ctx } };
}

export function buildTalosconfig(input: TalosconfigInput): string {
  return stringify(talosconfigDocument(input), { indent: 4, lineWidth: 0 });
}
