/**
 * `ctr images import -`: an image archive (docker-archive or OCI layout tarball) streamed into containerd's image
 * store of a namespace and unpacked, as upstream's ImageService/Import does with the containerd client. Returns the
 * names of the images imported, in the order ctr reports them (`unpacking <name> (<digest>)...done`).
 */
import { spawn } from "node:child_process";

/** The containerd client binary and socket to import with (a Ctr is one). */
export interface CtrTarget {
  bin: string;
  address: string;
}

export async function importImages(ctr: CtrTarget, namespace: string, archive: AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<string[]> {
  const child = spawn(ctr.bin, ["-a", ctr.address, "--connect-timeout", "3s", "-n", namespace, "images", "import", "-"], {
    stdio: ["pipe", "pipe", "pipe"],
    signal,
    killSignal: "SIGKILL",
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve(code));
  });
  // ctr may exit early (a broken archive): writing then fails with EPIPE, and the exit status tells why.
  child.stdin.on("error", () => {});
  try {
    for await (const chunk of archive) {
      if (child.exitCode !== null) break;
      if (!child.stdin.write(chunk)) await new Promise<void>((r) => child.stdin.once("drain", r).once("close", r));
    }
  } finally {
    child.stdin.end();
  }
  const code = await exited;
  if (code !== 0) {
    const why = err.trim().split("\n").filter(Boolean).pop() ?? `exit status ${code}`;
    throw new Error(why.replace(/^ctr: /, ""));
  }
  return [...out.matchAll(/^unpacking (\S+) \(sha256:[0-9a-f]+\)\.\.\.done$/gm)].map((m) => m[1]);
}
