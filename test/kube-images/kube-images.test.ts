/**
 * The Kubernetes component images of `make kube-images` (image/kube, docs/kubernetes-images.md), as a node
 * gets them: pushed by image/kube/push.sh to a real Debian docker-registry on loopback, then pulled by a
 * real containerd (Debian 1.6, own temp root and socket) under their UPSTREAM names (registry.k8s.io/...,
 * ghcr.io/..., docker.io/...) through hosts.toml mirrors written by image/kube/mirrors.sh. The loopback
 * registry stands in for the public registries, which this machine cannot reach; the mirror files use
 * --no-fallback so that nothing is sent past loopback. A few images then run their binary's --version.
 *
 * Needs root, containerd, ctr, runc, docker-registry, skopeo, and the built cache ($MACHINED_CACHE,
 * default /var/cache/machined). Without the cache it skips, except under CI (CI=true), where .ci/run
 * builds the images first and a missing cache is a failure. The registry's storage is kept in the cache
 * (kube-images/test-registry), so after the first run the pushes are skipped by digest.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noCgroups } from "../../src/host/cgroups.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { ContainerdService } from "../../src/supervisor/services/containerd.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { freePort, killByMarker, missing, tempDir, waitUntil } from "../supervisor/helpers.js";

const ROOT = join(import.meta.dirname, "..", "..");
const ARCH = process.arch === "arm64" ? "arm64" : "amd64";
const CACHE = process.env.MACHINED_CACHE ?? "/var/cache/machined";
const script = (name: string) => join(ROOT, "image", "kube", name);
const env = { ...process.env, ARCH };

interface Built {
  layout: string;
  ref: string;
  upstream: string;
}

/** image/kube/list.sh: the built images (and, on stderr, what is not built). */
function listBuilt(): { built: Built[]; notBuilt: string } {
  const out = execFileSync("bash", [script("list.sh")], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  let notBuilt = "";
  try {
    execFileSync("bash", [script("list.sh"), "--check"], { env, stdio: ["ignore", "ignore", "pipe"] });
  } catch (e) {
    notBuilt = String((e as { stderr?: Buffer }).stderr ?? e).trim();
  }
  const built = out
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [layout, ref, upstream] = l.split(" ");
      return { layout, ref, upstream };
    });
  return { built, notBuilt };
}

const tools = missing({ root: true, bins: ["containerd", "ctr", "runc", "docker-registry", "skopeo", "curl", "node"] });
const listed = tools ? { built: [], notBuilt: "" } : listBuilt();
const skip = tools ?? (listed.notBuilt && !process.env.CI ? `the image cache is not built (make kube-images): ${listed.notBuilt}` : null);
if (skip) console.log(`skipping kube-images tests: ${skip}`);

const kube = (process.env.KUBE_VERSIONS_TEST ?? "v1.37.2 v1.36.3").split(" ");

describe.skipIf(!!skip)("Kubernetes component images through a loopback registry mirror", () => {
  let dir: string;
  let registry: ChildProcess | undefined;
  let addr: string;
  let hostsDir: string;
  let sup: Supervisor;
  let cd: ContainerdService;
  let pushLog = "";

  beforeAll(async () => {
    dir = tempDir("kube-images");
    const port = await freePort();
    addr = `127.0.0.1:${port}`;
    const storage = join(CACHE, "kube-images", "test-registry", ARCH);
    mkdirSync(storage, { recursive: true });
    writeFileSync(
      join(dir, "registry.yml"),
      `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${storage}\nhttp:\n  addr: ${addr}\n`,
    );
    registry = spawn("docker-registry", ["serve", join(dir, "registry.yml")], { stdio: "ignore" });
    await waitUntil(
      () => {
        try {
          execFileSync("curl", ["-sf", "-o", "/dev/null", `http://${addr}/v2/`]);
          return true;
        } catch {
          return false;
        }
      },
      15_000,
      `docker-registry on ${addr}`,
    );
    // push.sh logs on stderr; keep that to show what the first push did.
    pushLog = execFileSync("bash", ["-c", `bash ${script("push.sh")} ${addr} 2>&1 >/dev/null`], { env, encoding: "utf8", timeout: 300_000 });
    hostsDir = execFileSync("bash", [script("mirrors.sh"), join(dir, "certs.d"), addr, "--no-fallback"], { encoding: "utf8" }).trim();

    sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(join(dir, "logs")), waitDescribeIntervalMs: 50 });
    cd = new ContainerdService({ stateDir: dir, cri: false, health: { initialDelayMs: 50, periodMs: 200 }, gracefulStopMs: 3000 });
    sup.load(cd);
    sup.start("containerd");
    await sup.waitFor("containerd", "up", AbortSignal.timeout(20_000));
  }, 360_000);

  afterAll(async () => {
    await sup?.shutdown();
    // The registry is ours, not the supervisor's: wait for it to go, so that the leftover check below sees only
    // what the supervisor failed to stop.
    if (registry && registry.exitCode === null && registry.signalCode === null) {
      const gone = new Promise((r) => registry!.once("exit", r));
      registry.kill();
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
    }
    if (dir) {
      expect(killByMarker(dir)).toEqual([]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const ctr = (args: string[], timeoutMs = 120_000) => cd.ctr.exec(args, "k8s.io", { signal: AbortSignal.timeout(timeoutMs) });
  let runs = 0;
  /** Runs argv in a fresh container of an already pulled image (own namespaces; the host is untouched). */
  const run = (image: string, argv: string[]) => ctr(["run", "--rm", image, `kube-images-${process.pid}-${runs++}`, ...argv], 60_000);

  // Under CI the cache must be there (.ci/run builds it first), so a missing piece fails here instead of skipping.
  it("every image and the CNI archive of versions.env is built", () => {
    expect(listed.notBuilt).toBe("");
  });

  it("mirror files name each upstream host and send it to the loopback registry", () => {
    expect(readdirSync(hostsDir).sort()).toEqual(["docker.io", "ghcr.io", "registry.k8s.io"]);
    const toml = execFileSync("cat", [join(hostsDir, "registry.k8s.io", "hosts.toml")], { encoding: "utf8" });
    expect(toml).toContain(`[host."http://${addr}"]`);
    expect(toml).toContain('capabilities = ["pull", "resolve"]');
  });

  it("push.sh is idempotent: a second push finds every digest already there", () => {
    expect(pushLog).toMatch(/registry 127\.0\.0\.1:\d+: pushed \d+, already there \d+/);
    const again = execFileSync("bash", ["-c", `bash ${script("push.sh")} ${addr} 2>&1 >/dev/null`], { env, encoding: "utf8" });
    expect(again).toContain(`pushed 0, already there ${listed.built.length},`);
  });

  it("pulls every built image under its upstream name through the mirror", async () => {
    const names = listed.built.map((b) => b.upstream);
    for (const v of kube) {
      for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"]) expect(names).toContain(`registry.k8s.io/${c}:${v}`);
      expect(names).toContain(`ghcr.io/siderolabs/kubelet:${v}`);
    }
    for (const n of ["registry.k8s.io/etcd:v3.7.3", "registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10", "docker.io/library/busybox:1.37"])
      expect(names).toContain(n);
    expect(names.some((n) => n.startsWith("ghcr.io/siderolabs/flannel:v0."))).toBe(true);
    for (const n of names) await ctr(["images", "pull", "--hosts-dir", hostsDir, "--platform", `linux/${ARCH}`, n], 180_000);
    const have = await ctr(["images", "ls", "-q"]);
    for (const n of names) expect(have.split("\n")).toContain(n);
  }, 600_000);

  it.each(kube)("kube-apiserver, kubelet and the scheduler %s report their version", async (v) => {
    expect((await run(`registry.k8s.io/kube-apiserver:${v}`, ["/usr/local/bin/kube-apiserver", "--version"])).trim()).toBe(`Kubernetes ${v}`);
    expect((await run(`ghcr.io/siderolabs/kubelet:${v}`, ["/usr/local/bin/kubelet", "--version"])).trim()).toBe(`Kubernetes ${v}`);
    expect((await run(`registry.k8s.io/kube-scheduler:${v}`, ["/usr/local/bin/kube-scheduler", "--version"])).trim()).toBe(`Kubernetes ${v}`);
  }, 120_000);

  it("the kubelet image has a shell, mount tools, /etc/passwd and iptables", async () => {
    const out = await run(`ghcr.io/siderolabs/kubelet:${kube[0]}`, [
      "/bin/sh",
      "-c",
      "grep -c '^root:' /etc/passwd /etc/group; for t in mount umount nsenter losetup; do test -x /bin/$t && echo have-$t; done; iptables --version",
    ]);
    expect(out).toContain("/etc/passwd:1");
    expect(out).toContain("/etc/group:1");
    for (const t of ["mount", "umount", "nsenter", "losetup"]) expect(out).toContain(`have-${t}`);
    expect(out).toMatch(/iptables v1\.\d+\.\d+ \(nf_tables\)/);
  }, 60_000);

  it("kube-proxy carries nft, iptables and conntrack", async () => {
    const out = await run(`registry.k8s.io/kube-proxy:${kube[0]}`, ["/bin/sh", "-c", "nft --version; ip6tables --version; conntrack --version; kube-proxy --version"]);
    expect(out).toMatch(/^nftables v1\.\d+\.\d+/m);
    expect(out).toMatch(/^ip6tables v1\.\d+\.\d+ \(nf_tables\)/m);
    expect(out).toMatch(/^conntrack v1\.\d+/m);
    expect(out).toContain(`Kubernetes ${kube[0]}`);
  }, 60_000);

  it("etcd, CoreDNS, flannel and pause report their versions", async () => {
    expect(await run("registry.k8s.io/etcd:v3.7.3", ["/usr/local/bin/etcd", "--version"])).toMatch(/^etcd Version: 3\.7\.3$/m);
    expect(await run("registry.k8s.io/etcd:v3.7.3", ["/usr/local/bin/etcdctl", "version"])).toMatch(/^etcdctl version: 3\.7\.3$/m);
    expect(await run("registry.k8s.io/coredns/coredns:v1.14.6", ["/coredns", "-version"])).toMatch(/^CoreDNS-1\.14\.6$/m);
    const flannel = listed.built.find((b) => b.upstream.startsWith("ghcr.io/siderolabs/flannel:"))!.upstream;
    const fv = flannel.split(":")[1];
    const out = await run(flannel, ["/bin/sh", "-c", "/opt/bin/flanneld --version 2>&1; test -x /flannel && echo plugin-ok; cp --help 2>&1 | head -1; nft --version"]);
    // flanneld prints "v0.28.9" (or "linux/amd64, go1.26.8, v0.28.9" on a terminal)
    expect(out).toMatch(new RegExp(`(^|, )${fv.replace(/\./g, "\\.")}$`, "m"));
    expect(out).toContain("plugin-ok");
    expect(out).toMatch(/BusyBox/);
    expect(out).toMatch(/^nftables v/m);
    expect((await run("registry.k8s.io/pause:3.10.2", ["/pause", "--version"])).trim()).toBe("pause (machined) 3.10.2");
    expect((await run("docker.io/library/busybox:1.37", ["sh", "-c", "echo hello from busybox"])).trim()).toBe("hello from busybox");
  }, 120_000);

  it("the CNI plugin archive has bridge, loopback, host-local, portmap and flannel, each answering VERSION", () => {
    const tar = execFileSync("bash", ["-c", `. ${script("lib.sh")}; echo "$CNI_TAR"`], { env, encoding: "utf8" }).trim();
    expect(existsSync(tar)).toBe(true);
    const out = join(dir, "cni");
    mkdirSync(out);
    execFileSync("tar", ["-xf", tar, "-C", out]);
    expect(readdirSync(out).sort()).toEqual(["bridge", "flannel", "host-local", "loopback", "portmap"]);
    for (const p of readdirSync(out)) {
      const v = execFileSync(join(out, p), [], { env: { CNI_COMMAND: "VERSION" }, encoding: "utf8" });
      expect(JSON.parse(v).supportedVersions, p).toContain("0.4.0");
    }
  });
});
