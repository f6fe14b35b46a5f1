/** Shared helpers for the supervisor tests (real processes; each test says when it needs root or a binary). */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Supervisor } from "../../src/supervisor/supervisor.js";

export const isRoot = process.getuid?.() === 0;

export function which(bin: string): string | null {
  try {
    return execFileSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

/** Returns a skip reason (printed) or null when everything needed is present. */
export function missing(opts: { root?: boolean; bins?: string[] }): string | null {
  if (opts.root && !isRoot) return "needs root";
  for (const b of opts.bins ?? []) if (!which(b)) return `binary ${b} not installed`;
  return null;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `${prefix}-`));
}

export async function waitUntil(pred: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function lastEvent(sup: Supervisor, id: string): string {
  const ev = sup.info(id)?.events ?? [];
  return ev[ev.length - 1]?.msg ?? "";
}

export function eventMsgs(sup: Supervisor, id: string): string[] {
  return (sup.info(id)?.events ?? []).map((e) => e.msg);
}

/** PID from the last "... started with PID 123" / "Started task x (PID 123) ..." event. */
export function startedPid(sup: Supervisor, id: string): number {
  const ev = eventMsgs(sup, id).filter((m) => /started with PID \d+|^Started task \S+ \(PID \d+\)/.test(m));
  const m = /PID (\d+)/.exec(ev[ev.length - 1] ?? "");
  if (!m) throw new Error(`no PID event for ${id}`);
  return Number(m[1]);
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const st = execFileSync("cat", [`/proc/${pid}/stat`], { encoding: "utf8" });
    return st.slice(st.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

export async function collect(it: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const b of it) parts.push(b);
  return Buffer.concat(parts).toString();
}

/**
 * A tiny OCI image built offline with umoci from busybox-static: /entrypoint.sh prints its args and an
 * optional bind-mounted file, then sleeps with a TERM trap; /kubelet is a fake kubelet that prints its
 * args and serves /healthz on --healthz-port with busybox httpd. Returns the layout tarball's path.
 */
export function buildTinyImage(dir: string): string {
  const script = `
set -e
cd ${dir}
umoci init --layout oci
umoci new --image oci:v1
umoci unpack --image oci:v1 bundle >/dev/null
mkdir -p bundle/rootfs/bin bundle/rootfs/data
cp $(command -v busybox) bundle/rootfs/bin/busybox
for l in sh echo sleep cat ls mkdir httpd; do ln -sf busybox bundle/rootfs/bin/$l; done
cat > bundle/rootfs/entrypoint.sh <<'EOS'
#!/bin/sh
echo "entrypoint argc=$# args: $*"
for a in "$@"; do echo "arg: $a"; done
[ -f /data/hello.txt ] && echo "bind: $(cat /data/hello.txt)"
trap 'echo "got TERM"; exit 0' TERM
sleep 3600 &
wait $!
EOS
cat > bundle/rootfs/kubelet <<'EOS'
#!/bin/sh
echo "kubelet args: $*"
echo "self pid: $$"
port=10248
for a in "$@"; do case "$a" in --healthz-port=*) port="\${a#--healthz-port=}";; esac; done
[ -f /var/lib/kubelet/marker ] && echo "marker: $(cat /var/lib/kubelet/marker)"
mkdir -p /tmp/www && echo ok > /tmp/www/healthz
exec httpd -f -p 127.0.0.1:$port -h /tmp/www
EOS
chmod +x bundle/rootfs/entrypoint.sh bundle/rootfs/kubelet
umoci repack --image oci:v1 bundle >/dev/null
umoci config --image oci:v1 --config.entrypoint /entrypoint.sh --config.cmd default-arg --config.env PATH=/bin --os linux --architecture amd64
umoci gc --layout oci
tar -C oci -cf tiny-oci.tar oci-layout index.json blobs
`;
  execFileSync("sh", ["-c", script], { stdio: "pipe" });
  return join(dir, "tiny-oci.tar");
}

/** etcd PKI like services-feasibility.md §5: P-256 CA, server/peer (serverAuth+clientAuth), client (clientAuth). */
export function makeEtcdPki(dir: string): import("../../src/supervisor/services/etcd.js").EtcdPki {
  const script = `
set -e
cd ${dir}
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -subj /O=etcd/CN=etcd -days 2 -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,digitalSignature -out ca.crt 2>/dev/null
for n in server peer client; do
  openssl ecparam -name prime256v1 -genkey -noout -out $n.key
  if [ $n = client ]; then eku=clientAuth; else eku=serverAuth,clientAuth; fi
  openssl req -new -key $n.key -subj /CN=$n -out $n.csr 2>/dev/null
  printf "extendedKeyUsage=$eku\\nsubjectAltName=DNS:localhost,IP:127.0.0.1\\nkeyUsage=critical,digitalSignature\\n" > $n.ext
  openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile $n.ext -out $n.crt 2>/dev/null
done
`;
  execFileSync("sh", ["-c", script], { stdio: "pipe" });
  const r = (f: string) => readFileSync(join(dir, f), "utf8");
  return {
    ca: r("ca.crt"),
    serverCert: r("server.crt"),
    serverKey: r("server.key"),
    peerCert: r("peer.crt"),
    peerKey: r("peer.key"),
    clientCert: r("client.crt"),
    clientKey: r("client.key"),
  };
}

/** SIGKILL every process whose command line mentions `marker` (a test's unique temp dir). By PID only. */
export function killByMarker(marker: string): number[] {
  const killed: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${e}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (cmd.includes(marker)) {
      try {
        process.kill(Number(e), "SIGKILL");
        killed.push(Number(e));
      } catch {
        // gone
      }
    }
  }
  return killed;
}

/** waitFor(id, "up") whose timeout error shows the service's recent events (what went wrong). */
export async function waitUp(sup: Supervisor, id: string, timeoutMs = 20_000): Promise<void> {
  try {
    await sup.waitFor(id, "up", AbortSignal.timeout(timeoutMs));
  } catch {
    const ev = eventMsgs(sup, id).slice(-6).join("\n  ");
    throw new Error(`${id} not up after ${timeoutMs} ms; last events:\n  ${ev}\nlog tail:\n${sup.logs.get(id).tail(10).toString()}`);
  }
}
