/**
 * `npm run bench:boot [-- --arch amd64|arm64] [--mem 2048] [--ram-floor]`: boot figures of the OS image under
 * QEMU (TCG: /dev/kvm is unusable on this host, so everything is software-emulated and ~10-50x slower than
 * hardware). Builds nothing: run `make image ARCH=...` first. One QEMU at a time, always killed.
 *
 *   - UEFI boot from disk.raw (maintenance): firmware+bootloader, kernel start -> /init, /init -> API listening,
 *     QEMU start -> the host completes a TLS handshake on the forwarded API port;
 *   - the same VM booted with -kernel/-initrd, and with a minimal busybox init (static busybox + the virtio
 *     NIC modules) that configures the same address and listens on the same port: the ratio is the cost of
 *     the agent (node start-up, bundle load, coldplug in JS, the API) over a bare Linux userland;
 *   - sizes from build/<arch>/manifest.json and the files;
 *   - --ram-floor: the smallest memory (of 512/640/768/1024 MiB) that reaches the API with -kernel/-initrd;
 *   - install / upgrade-to-ready / fallback times come from test/vm/e2e.test.ts (it prints them); this script
 *     reads the last timings line from build/amd64/vm/e2e-timings.json when present.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import net from "node:net";
import { TOP, Vm, missingVmPrereqs, type Arch } from "../test/vm/vm.js";

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const arch = opt("arch", "amd64") as Arch;
const mem = Number(opt("mem", "1024"));
const OUT = path.join(TOP, "build", arch);
const DIR = path.join(OUT, "bench");
const CONSOLE = arch === "amd64" ? "ttyS0" : "ttyAMA0";

function handshake(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tls.connect({ port, host: "127.0.0.1", rejectUnauthorized: false, ALPNProtocols: ["h2"] });
    s.setTimeout(3000, () => (s.destroy(), resolve(false)));
    s.on("secureConnect", () => (s.end(), resolve(true)));
    s.on("error", () => resolve(false));
  });
}
function plainAnswer(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    let got = "";
    s.setTimeout(1500, () => s.destroy());
    s.on("data", (d) => (got += d));
    s.on("error", () => {});
    s.on("close", () => resolve(got.includes("busybox-ok")));
  });
}


interface BootFigures {
  kernelStartHostS?: number;
  kernelToInitS?: number;
  initToListeningS?: number;
  hostAnswerS?: number;
  ok: boolean;
}

/** Boots once and measures; `probe` decides when the host got its answer. */
async function bootOnce(name: string, o: Partial<Parameters<typeof Vm.start>[0]>, probe: (port: number) => Promise<boolean>, listenRe: RegExp, timeoutMs = 6 * 60_000): Promise<BootFigures> {
  fs.mkdirSync(DIR, { recursive: true });
  const vars = path.join(DIR, `${name}.vars.fd`);
  fs.rmSync(vars, { force: true });
  const vm = await Vm.start({ arch, name: `bench-${name}`, disks: [], varsFile: vars, memMiB: mem, timeoutMs: timeoutMs + 30_000, ...o });
  const until = Date.now() + timeoutMs;
  let answered: number | undefined;
  try {
    while (Date.now() < until && vm.running) {
      if (await probe(vm.port)) {
        answered = Date.now() - vm.started;
        break;
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    vm.kill();
    await vm.exited;
  }
  const find = (re: RegExp) => vm.lines.find((l) => re.test(l.text));
  const runInit = find(/\] Run \/init as init process/);
  const runInitUp = runInit ? Number(/^\[\s*([\d.]+)\]/.exec(runInit.text)?.[1]) : undefined;
  const listen = find(listenRe);
  const listenUp = listen ? Number(/up=([\d.]+)s/.exec(listen.text)?.[1] ?? /^\[\s*([\d.]+)\]/.exec(listen.text)?.[1]) : undefined;
  return {
    kernelStartHostS: runInit && runInitUp !== undefined ? (runInit.ms - runInitUp * 1000) / 1000 : undefined,
    kernelToInitS: runInitUp,
    initToListeningS: listenUp !== undefined && runInitUp !== undefined ? listenUp - runInitUp : undefined,
    hostAnswerS: answered !== undefined ? answered / 1000 : undefined,
    ok: answered !== undefined,
  };
}

/** initramfs: static busybox + the NIC modules; init mounts, insmods, sets the address, answers on :50000. */
function busyboxInitramfs(): string {
  const kver = fs.readFileSync(path.join(TOP, "build/cache", arch, "kernel-release"), "utf8").trim();
  const mods = path.join(OUT, "work/sysroot/lib/modules", kver);
  const order = arch === "amd64"
    ? ["virtio/virtio_ring", "virtio/virtio", "virtio/virtio_pci_modern_dev", "virtio/virtio_pci_legacy_dev", "virtio/virtio_pci", "net/core/failover", "net/net_failover", "net/virtio_net"]
    : ["net/core/failover", "net/net_failover", "net/virtio_net"];
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bench-busybox-"));
  const bb = arch === "amd64" ? "/bin/busybox" : "";
  if (!bb || !fs.existsSync(bb)) throw new Error(`no static busybox for ${arch} on this host`);
  for (const d of ["bin", "proc", "sys", "dev", "mods"]) fs.mkdirSync(path.join(root, d));
  fs.copyFileSync(bb, path.join(root, "bin/busybox"));
  fs.chmodSync(path.join(root, "bin/busybox"), 0o755);
  const found: string[] = [];
  for (const m of order) {
    const base = m.startsWith("net/core") ? path.join(mods, "kernel", m) : path.join(mods, "kernel/drivers", m);
    const f = [".ko", ".ko.xz", ".ko.zst"].map((x) => base + x).find((x) => fs.existsSync(x));
    if (!f) continue; // built in
    if (f.endsWith(".ko")) fs.copyFileSync(f, path.join(root, "mods", path.basename(f)));
    else throw new Error(`compressed module ${f}: busybox insmod cannot load it`);
    found.push(path.basename(f));
  }
  fs.writeFileSync(
    path.join(root, "init"),
    `#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
echo "busybox-init up=$(/bin/busybox cut -d' ' -f1 /proc/uptime)s start"
for m in ${found.join(" ")}; do /bin/busybox insmod /mods/$m; done
/bin/busybox ip link set lo up
/bin/busybox ip link set eth0 up
/bin/busybox ip addr add 10.0.2.15/24 dev eth0
/bin/busybox ip route add default via 10.0.2.2
echo "busybox-init up=$(/bin/busybox cut -d' ' -f1 /proc/uptime)s listening on :50000"
while true; do echo busybox-ok | /bin/busybox nc -l -p 50000; done
`,
    { mode: 0o755 },
  );
  const out = path.join(DIR, "busybox-initramfs.cpio.gz");
  execFileSync("sh", ["-c", `cd '${root}' && find . | sort | cpio -o -H newc --owner=0:0 --quiet | gzip -9 > '${out}'`]);
  fs.rmSync(root, { recursive: true, force: true });
  return out;
}

const fmt = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "n/a" : `${v.toFixed(1)} s`);
const mib = (f: string) => (fs.existsSync(f) ? `${(fs.statSync(f).size / 2 ** 20).toFixed(1)} MiB` : "n/a");

async function main() {
  const missing = missingVmPrereqs(arch);
  if (missing) {
    console.log(`bench:boot skipped: ${missing}`);
    return;
  }
  if (!fs.existsSync(path.join(OUT, "disk.raw"))) {
    console.log(`bench:boot skipped: build/${arch} is empty (make image ARCH=${arch} first)`);
    return;
  }
  const cmdline = fs.readFileSync(path.join(OUT, "work/cmdline"), "utf8").trim();
  const listenRe = /\[machined init .*\] listening on :50000/;
  const rows: string[] = [];
  const disk = path.join(DIR, "boot.raw");
  fs.mkdirSync(DIR, { recursive: true });
  execFileSync("cp", ["--sparse=always", path.join(OUT, "disk.raw"), disk]);

  const uefi = await bootOnce("uefi", { disks: [{ file: disk, format: "raw", serial: "boot", bootindex: 0 }] }, handshake, listenRe);
  const direct = await bootOnce("kernel", { kernel: { vmlinuz: path.join(OUT, "vmlinuz"), initrd: path.join(OUT, "initramfs.zst"), append: `${cmdline} machined.slot=A` } }, handshake, listenRe);
  let bb: BootFigures | undefined;
  try {
    const initrd = busyboxInitramfs();
    bb = await bootOnce("busybox", { kernel: { vmlinuz: path.join(OUT, "vmlinuz"), initrd, append: `console=${CONSOLE} panic=10` } }, plainAnswer, /busybox-init .* listening on :50000/);
  } catch (err) {
    rows.push(`busybox comparison not run: ${(err as Error).message}`);
  }

  const loadavg = fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`bench:boot ${arch}, QEMU TCG, ${mem} MiB, 2 vCPUs, host load ${loadavg}`);
  console.log(`| | UEFI disk (agent) | -kernel (agent) | -kernel (busybox init) | agent / busybox |`);
  console.log(`|---|---|---|---|---|`);
  const ratio = (a?: number, b?: number) => (a !== undefined && b ? `${(a / b).toFixed(1)}x` : "n/a");
  console.log(`| QEMU start → kernel start (host) | ${fmt(uefi.kernelStartHostS)} | ${fmt(direct.kernelStartHostS)} | ${fmt(bb?.kernelStartHostS)} | |`);
  console.log(`| kernel start → /init (guest) | ${fmt(uefi.kernelToInitS)} | ${fmt(direct.kernelToInitS)} | ${fmt(bb?.kernelToInitS)} | ${ratio(direct.kernelToInitS, bb?.kernelToInitS)} |`);
  console.log(`| /init → API listening (guest) | ${fmt(uefi.initToListeningS)} | ${fmt(direct.initToListeningS)} | ${fmt(bb?.initToListeningS)} | ${ratio(direct.initToListeningS, bb?.initToListeningS)} |`);
  console.log(`| QEMU start → host gets the answer | ${fmt(uefi.hostAnswerS)} | ${fmt(direct.hostAnswerS)} | ${fmt(bb?.hostAnswerS)} | ${ratio(direct.hostAnswerS, bb?.hostAnswerS)} |`);
  console.log(`sizes: vmlinuz ${mib(path.join(OUT, "vmlinuz"))}, initramfs.zst ${mib(path.join(OUT, "initramfs.zst"))}, rootfs.sqsh ${mib(path.join(OUT, "rootfs.sqsh"))}, installer ${mib(path.join(OUT, `installer-${arch}.oci.tar`))}, disk.raw allocated ${(Number(execFileSync("du", ["-k", path.join(OUT, "disk.raw")], { encoding: "utf8" }).split("\t")[0]) / 1024).toFixed(1)} MiB`);
  for (const r of rows) console.log(r);

  const timings = path.join(TOP, "build", arch, "vm", "e2e-timings.json");
  if (fs.existsSync(timings)) console.log(`e2e step times (test/vm/e2e.test.ts, ms): ${fs.readFileSync(timings, "utf8").trim()}`);
  else console.log("install / upgrade-to-ready / fallback times: run npm run test:vm (it writes build/amd64/vm/e2e-timings.json)");

  if (args.includes("--ram-floor")) {
    for (const m of [512, 640, 768, 1024]) {
      const r = await bootOnce(`ram-${m}`, { memMiB: m, kernel: { vmlinuz: path.join(OUT, "vmlinuz"), initrd: path.join(OUT, "initramfs.zst"), append: `${cmdline} machined.slot=A` } }, handshake, listenRe, 5 * 60_000);
      console.log(`RAM ${m} MiB: ${r.ok ? `API answered after ${fmt(r.hostAnswerS)}` : "did not reach the API"}`);
      if (r.ok) break;
    }
  }
}

await main();
