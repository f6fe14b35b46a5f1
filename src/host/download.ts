/**
 * Fetches a document over HTTP(S) into memory (extra manifests named by URL). Only http and https: upstream's
 * go-getter also knows git, S3 and other forges, which this node does not speak.
 */
export interface DownloadOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Refuse bodies larger than this (a manifest is text; this bounds memory). */
  maxBytes?: number;
}

export type Downloader = (url: string, opts?: DownloadOptions) => Promise<string>;

export const downloadText: Downloader = async (url, opts = {}) => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`error downloading ${JSON.stringify(url)}: not a URL`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Error(`error downloading ${JSON.stringify(url)}: unsupported scheme ${JSON.stringify(parsed.protocol.replace(/:$/, ""))} (only http and https)`);
  }
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 60_000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  const max = opts.maxBytes ?? 64 * 1024 * 1024;
  let res: Response;
  try {
    res = await fetch(url, { headers: opts.headers, signal, redirect: "follow" });
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    throw new Error(`error downloading ${JSON.stringify(url)}: ${timeout.aborted ? "timed out" : (err.cause?.code ?? err.cause?.message ?? err.message)}`);
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`error downloading ${JSON.stringify(url)}: bad response code: ${res.status}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  for (;;) {
    if (!reader) break;
    const { done, value: chunk } = await reader.read();
    if (done) break;
    size += chunk.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new Error(`error downloading ${JSON.stringify(url)}: larger than ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
};
