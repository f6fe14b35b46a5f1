#!/usr/bin/env node
// `make qemu-smoke ARCH=...`: boots the image once under QEMU (image/qemu.sh), bounded by a timeout, and
// measures: firmware+bootloader time, kernel start -> /init, /init -> "listening on :50000", and when the host
// first gets an answer on the forwarded port. Always kills QEMU. Exit 0 only if the host got an answer.
//   SMOKE_TIMEOUT=300 (s)  BOOT=disk|kernel  QEMU_PORT (default: a free port)  SMOKE_LOG=file (serial log)
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import tls from "node:tls";
import path from "node:path";

const arch = process.argv[2] ?? process.env.ARCH ?? "amd64";
const top = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const timeoutS = Number(process.env.SMOKE_TIMEOUT ?? 300);
const port = Number(process.env.QEMU_PORT ?? (await freePort()));
const logFile = process.env.SMOKE_LOG ?? path.join(top, "build", arch, "qemu", `smoke-${process.env.BOOT ?? "disk"}.log`);
fs.mkdirSync(path.dirname(logFile), { recursive: true });
const out = fs.createWriteStream(logFile);

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

const t0 = Date.now();
const ms = () => Date.now() - t0;
const marks = {};
const mark = (k, v = ms()) => {
  if (!(k in marks)) marks[k] = v;
};
// QEMU runs in its own process group so that killing the group also ends the timeout wrapper and qemu itself.
const child = spawn("sh", [path.join(top, "image/qemu.sh"), arch], {
  env: { ...process.env, QEMU_PORT: String(port), QEMU_TIMEOUT: String(timeoutS + 10), QEMU_RUNDIR: path.join(top, "build", arch, "qemu", "smoke"), QEMU_FRESH: "1" },
  stdio: ["ignore", "pipe", "pipe"],
  detached: true,
});
let buf = "";
let versions = 0;
child.stdout.on("data", (d) => {
  buf += d.toString("latin1");
  let i;
  while ((i = buf.search(/\r?\n/)) >= 0) {
    const line = buf.slice(0, i).replace(/\r$/, "");
    buf = buf.slice(buf[i] === "\r" ? i + 2 : i + 1);
    out.write(`${String(ms()).padStart(7)} ${line}\n`);
    if (/Linux version \d/.test(line)) mark("kernelLine");
    const ri = /^\[\s*([\d.]+)\] Run \/init as init process/.exec(line);
    if (ri) (mark("runInit"), mark("runInitUptime", Number(ri[1])));
    // image/smoke-agent.ts prints "[machined-smoke +Nms up=Ss] msg", the real agent (machined init) "[machined init ...]"
    const up = /\[machined(?:-smoke| init) \+\d+ms up=([\d.]+)s\] (.*)/.exec(line);
    if (up) {
      const [_, u, msg] = up;
      if (msg.startsWith("start ")) mark("initStart");
      if (msg.startsWith("early mounts done")) mark("nodeUpUptime", Number(u));
      if (msg.startsWith("switched root")) mark("switchedRootUptime", Number(u));
      if (msg.startsWith("coldplug")) (mark("coldplugUptime", Number(u)), (marks.coldplug = msg));
      if (msg.startsWith("network")) mark("networkUptime", Number(u));
      if (msg.startsWith("listening on :50000")) (mark("listening"), mark("listeningUptime", Number(u)));
      if (msg.startsWith("boot failed") || msg.startsWith("machined.testfail")) mark("fatal", msg);
      if (/^\/usr\/(s?bin)\//.test(msg)) versions++;
      if (msg.includes("FATAL")) mark("fatal", msg);
    }
    // a panic reboots (panic=10) into the same failure: stop at the first one
    if (/Kernel panic - not syncing|Initramfs unpacking failed|^fatal: /.test(line)) mark("fatal", line.trim());
    const ts = /^\[\s*([\d.]+)\]/.exec(line);
    if (ts && !("firstKernelTs" in marks)) mark("firstKernelTs", Number(ts[1]));
  }
});
child.stderr.on("data", (d) => out.write(`[qemu stderr] ${d}`));

function kill() {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {}
}
process.on("exit", kill);
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

/**
 * The smoke agent answers in plain text at once; the real agent speaks TLS (gRPC, maintenance certificate).
 * A connection that stays silent for a moment is tried again with a TLS handshake (ALPN h2).
 */
function probe() {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    let data = "";
    let connected = false;
    s.on("connect", () => (connected = true));
    s.setTimeout(800, () => s.destroy());
    s.on("data", (d) => (data += d));
    s.on("error", () => {});
    s.on("close", () => (data || !connected ? resolve(data) : probeTls().then(resolve)));
  });
}
function probeTls() {
  return new Promise((resolve) => {
    const s = tls.connect({ port, host: "127.0.0.1", rejectUnauthorized: false, ALPNProtocols: ["h2"], servername: "machined" });
    s.setTimeout(5000, () => s.destroy());
    s.on("secureConnect", () => {
      const c = s.getPeerCertificate();
      resolve(`TLS ${s.getProtocol()} alpn=${s.alpnProtocol} cert CN=${c?.subject?.CN ?? "?"}`);
      s.end();
    });
    s.on("error", () => resolve(""));
    s.on("close", () => resolve(""));
  });
}

const deadline = t0 + timeoutS * 1000;
let answer = "";
while (Date.now() < deadline && child.exitCode === null && !marks.fatal) {
  // slirp accepts and resets until the guest listens; probe gently
  answer = await probe();
  if (answer) break;
  await new Promise((r) => setTimeout(r, 250));
}
if (answer) {
  mark("hostAnswer");
  const until = Date.now() + 60_000; // give the version checks a moment, for the log
  while (versions < 5 && !/^TLS/.test(answer) && Date.now() < until && child.exitCode === null) await new Promise((r) => setTimeout(r, 250));
}
kill();
const s = (v) => (v === undefined ? "n/a" : `${(v / 1000).toFixed(2)} s`);
const g = (v) => (v === undefined ? "n/a" : `${v.toFixed(2)} s`);
const kernelStartHost = marks.runInit !== undefined ? marks.runInit - marks.runInitUptime * 1000 : undefined;
const d = (a, b) => (marks[a] !== undefined && marks[b] !== undefined ? marks[a] - marks[b] : undefined);
const report = [
  `smoke ${arch} boot=${process.env.BOOT ?? "disk"} port=${port}: ${answer ? `OK answer "${answer.trim()}"` : "FAILED (no answer)"}`,
  `  host clock from qemu start: kernel start ~${s(kernelStartHost)} (firmware + bootloader + loading kernel/initrd), /init ${s(marks.runInit)}, listening ${s(marks.listening)}, host answer ${s(marks.hostAnswer)}`,
  `  guest uptime: /init ${g(marks.runInitUptime)}, node running ${g(marks.nodeUpUptime)}, root switched ${g(marks.switchedRootUptime)}, coldplug done ${g(marks.coldplugUptime)}, network ${g(marks.networkUptime)}, listening ${g(marks.listeningUptime)}`,
  `  kernel start -> /init ${g(marks.runInitUptime)}; /init -> listening ${g(d("listeningUptime", "runInitUptime"))}; listening -> host answer ${s(d("hostAnswer", "listening"))}`,
  `  ${marks.coldplug ?? "no coldplug line"}`,
  `  userland checks logged: ${versions}/5; serial log: ${path.relative(process.cwd(), logFile)}; load average ${fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
];
if (marks.fatal) report.push(`  ${marks.fatal}`);
console.log(report.join("\n"));
out.end();
process.exit(answer ? 0 : 1);
