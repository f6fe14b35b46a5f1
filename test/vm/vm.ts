/**
 * QEMU (TCG) harness for the VM tests and scripts/bench-boot.ts: boots build/<arch> with UEFI firmware, the
 * API forwarded to a free loopback port, chosen disks, the serial console captured (lines with host times in
 * build/<arch>/vm/<name>.log). `-no-reboot`: a guest reboot ends QEMU, and the caller starts the next boot
 * with the disks it wants (that is how "reboot from the installed disk" is done). Always bounded, always
 * killed (process group).
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";

export type Arch = "amd64" | "arm64";

/** Everything a test started (QEMU, the registry): killed on exit and on SIGINT/SIGTERM (vitest aborts). */
const cleanups = new Set<() => void>();
export function onCleanup(fn: () => void): () => void {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}
const runCleanups = () => {
  for (const f of cleanups) f();
};
process.once("exit", runCleanups);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    runCleanups();
    process.exit(sig === "SIGINT" ? 130 : 143);
  });
}
export const TOP = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

// arm64 uses cortex-a72 (ARMv8.0, no pointer authentication): under TCG with -cpu max V8 once died in its
// deoptimizer ("Check failed: CodeKindCanDeoptimize") right after boot.
const FIRMWARE: Record<Arch, { code: string; vars: string; qemu: string; machine: string[] }> = {
  amd64: { code: "/usr/share/OVMF/OVMF_CODE_4M.fd", vars: "/usr/share/OVMF/OVMF_VARS_4M.fd", qemu: "qemu-system-x86_64", machine: ["-M", "q35", "-cpu", "max"] },
  arm64: { code: "/usr/share/AAVMF/AAVMF_CODE.fd", vars: "/usr/share/AAVMF/AAVMF_VARS.fd", qemu: "qemu-system-aarch64", machine: ["-M", "virt", "-cpu", "cortex-a72"] },
};

/** Why VM tests cannot run here, or undefined. */
export function missingVmPrereqs(arch: Arch): string | undefined {
  const fw = FIRMWARE[arch];
  try {
    execFileSync("sh", ["-c", `command -v ${fw.qemu}`], { stdio: "ignore" });
  } catch {
    return `${fw.qemu} is not installed (apt-get install qemu-system-${arch === "amd64" ? "x86" : "arm"})`;
  }
  for (const f of [fw.code, fw.vars]) if (!fs.existsSync(f)) return `firmware ${f} is missing (apt-get install ${arch === "amd64" ? "ovmf" : "qemu-efi-aarch64"})`;
  return undefined;
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export interface VmDisk {
  file: string;
  format: "raw" | "qcow2";
  serial: string;
  bootindex?: number;
}

export interface VmOptions {
  arch: Arch;
  name: string;
  disks: VmDisk[];
  /** firmware variables file (kept across boots of one machine) */
  varsFile: string;
  memMiB?: number;
  port?: number;
  /** host port forwarded to the guest's Kubernetes API server (6443); default: a free one */
  kubePort?: number;
  /** hard limit for this QEMU process */
  timeoutMs?: number;
  /** "bios": SeaBIOS (QEMU's default x86 firmware) instead of UEFI, so the disk boots through GRUB (amd64 only) */
  firmware?: "uefi" | "bios";
  /** direct kernel boot (skips firmware and bootloader) */
  kernel?: { vmlinuz: string; initrd: string; append: string };
  noReboot?: boolean;
}

export interface SerialLine {
  ms: number;
  text: string;
}

export class Vm {
  readonly lines: SerialLine[] = [];
  readonly started = Date.now();
  readonly exited: Promise<number | null>;
  private waiters: Array<() => void> = [];
  private child: ChildProcess;
  private timer: NodeJS.Timeout;

  private constructor(
    readonly opts: VmOptions,
    readonly port: number,
    readonly kubePort: number,
    readonly logFile: string,
  ) {
    const fw = FIRMWARE[opts.arch];
    if (!fs.existsSync(opts.varsFile)) fs.copyFileSync(fw.vars, opts.varsFile);
    const args = [
      ...fw.machine,
      "-accel", "tcg", "-m", String(opts.memMiB ?? 2048), "-smp", "2", "-nographic", "-serial", "stdio", "-monitor", "none",
      "-nic", `user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:${port}-:50000,hostfwd=tcp:127.0.0.1:${kubePort}-:6443`,
      "-device", "i6300esb", "-device", "virtio-rng-pci", ...(process.env.VM_WATCHDOG_DEBUG ? ["-watchdog-action", "debug"] : []),
      ...(opts.noReboot === false ? [] : ["-no-reboot"]),
    ];
    if (opts.arch === "amd64") args.splice(args.indexOf("i6300esb") - 1, 2); // keep i6300esb: q35 has PCI
    if (opts.arch === "amd64") args.push("-device", "i6300esb");
    for (const [i, d] of opts.disks.entries()) {
      args.push("-drive", `if=none,id=d${i},format=${d.format},file=${d.file}`);
      args.push("-device", `virtio-blk-pci,drive=d${i},serial=${d.serial}${d.bootindex !== undefined ? `,bootindex=${d.bootindex}` : ""}`);
    }
    if (opts.kernel) {
      args.push("-kernel", opts.kernel.vmlinuz, "-initrd", opts.kernel.initrd, "-append", opts.kernel.append);
    } else if (opts.firmware === "bios") {
      if (opts.arch !== "amd64") throw new Error("BIOS firmware exists only for amd64 VMs");
    } else {
      args.push("-drive", `if=pflash,format=raw,readonly=on,file=${fw.code}`, "-drive", `if=pflash,format=raw,file=${opts.varsFile}`);
    }
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const out = fs.createWriteStream(logFile);
    out.write(`# ${fw.qemu} ${args.join(" ")}\n`);
    this.child = spawn(fw.qemu, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    let buf = "";
    this.child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const text = buf.slice(0, i).replace(/\r/g, "").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "");
        buf = buf.slice(i + 1);
        const line = { ms: Date.now() - this.started, text };
        this.lines.push(line);
        out.write(`${String(line.ms).padStart(7)} ${text}\n`);
        const w = this.waiters;
        this.waiters = [];
        for (const f of w) f();
      }
    });
    this.child.stderr!.on("data", (d: Buffer) => out.write(`[qemu stderr] ${d}`));
    this.exited = new Promise((resolve) =>
      this.child.on("exit", (code) => {
        out.end();
        clearTimeout(this.timer);
        const w = this.waiters;
        this.waiters = [];
        for (const f of w) f();
        resolve(code);
      }),
    );
    this.timer = setTimeout(() => this.kill(), opts.timeoutMs ?? 15 * 60_000);
    const off = onCleanup(() => this.kill());
    void this.exited.then(off);
  }

  static async start(opts: VmOptions): Promise<Vm> {
    const port = opts.port ?? (await freePort());
    let kubePort = opts.kubePort ?? (await freePort());
    while (kubePort === port) kubePort = await freePort();
    const logFile = path.join(TOP, "build", opts.arch, "vm", `${opts.name}.log`);
    return new Vm(opts, port, kubePort, logFile);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(): void {
    try {
      if (this.child.pid) process.kill(-this.child.pid, "SIGKILL");
    } catch {
      // gone
    }
  }

  /** Waits for a serial line matching `re` (searching from line `from`); throws on timeout or QEMU exit. */
  async waitFor(re: RegExp, timeoutMs: number, from = 0): Promise<SerialLine & { index: number }> {
    const until = Date.now() + timeoutMs;
    let i = from;
    for (;;) {
      for (; i < this.lines.length; i++) if (re.test(this.lines[i].text)) return { ...this.lines[i], index: i };
      if (!this.running) throw new Error(`QEMU exited before ${re} appeared (log: ${this.logFile})\n${this.tail()}`);
      const left = until - Date.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${re} (log: ${this.logFile})\n${this.tail()}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 1000));
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  tail(n = 25): string {
    return this.lines.slice(-n).map((l) => `  | ${l.text}`).join("\n");
  }

  address(): string {
    return `127.0.0.1:${this.port}`;
  }

  insecureClient(): TestClient {
    return new TestClient(this.address(), insecureTls());
  }

  mtlsClient(c: { ca: string; crt: string; key: string }): TestClient {
    return new TestClient(this.address(), mtls(c.ca, c.crt, c.key));
  }
}

export const version = (c: TestClient, deadlineMs = 20_000) => c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs });

/** Retries `fn` until it resolves or the time is up (QEMU's forwarder accepts before the guest listens). */
export async function retry<T>(fn: () => Promise<T>, timeoutMs: number, pauseMs = 1000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
}

/** `make <target> ARCH=... ZSTD_LEVEL=3 ...` with output to a log file; throws with its tail on failure. */
export function make(args: string[], logName: string, env: Record<string, string> = {}): void {
  const log = path.join(TOP, "build", "vm-make-" + logName + ".log");
  fs.mkdirSync(path.dirname(log), { recursive: true });
  try {
    execFileSync("sh", ["-c", `make ${args.map((a) => `'${a}'`).join(" ")} > '${log}' 2>&1`], { cwd: TOP, env: { ...process.env, ...env }, timeout: 20 * 60_000 });
  } catch (err) {
    const tail = fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").slice(-30).join("\n") : "";
    throw new Error(`make ${args.join(" ")} failed (${(err as Error).message.split("\n")[0]}); log ${log}:\n${tail}`);
  }
}
