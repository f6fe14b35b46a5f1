#!/usr/bin/env node
// `make cluster [CONTROLPLANES=1] [NODES=3]`: boots NODES VMs from build/<arch> (QEMU, TCG) on one virtual network
// that this command creates and removes again, in the foreground until Ctrl-C:
//   - a network namespace (machined-cluster) with a bridge 10.5.0.1/24 and one tap per VM: nothing is added to the
//     host's own network (no interface, address, route or netfilter rule);
//   - dnsmasq on that bridge: DHCP (a fixed address per VM's MAC, 10.5.0.11, .12, ..., infinite leases) and DNS;
//   - the VMs boot through UEFI firmware (OVMF): from a copy of disk.raw until installed, then from their install
//     disk (/dev/vda, kept in build/<arch>/cluster/ across runs; CLUSTER_FRESH=1 starts empty) through its A/B boot
//     entries, so upgrade, rollback and fallback behave as on hardware. The image is built with no static address
//     on its command line (make image NET_CMDLINE=), so each node asks DHCP (the agent's own client) and keeps that
//     address in maintenance mode and after its install;
//   - forwarders joined by unix sockets (image/forward.mjs): 127.0.0.<10+i>:50000 and :6443 on the host reach node i's
//     API and API server; 10.5.0.1:5000 on the cluster network reaches the loopback registry 127.0.0.1:5000
//     (`make registry`), to which the installer is pushed as machined/installer:<version>;
//   - build/<arch>/cluster/patch.yaml: the config patch for every node (registry mirrors, DHCP on eth0, the loopback
//     addresses as extra certificate names). Roles are the operator's: apply controlplane.yaml to the first
//     CONTROLPLANES nodes and worker.yaml to the rest (README: "A cluster of VMs").
// Env: ARCH (amd64), NODES (3), CONTROLPLANES (1), CLUSTER_MEM_CP (3072), CLUSTER_MEM_WORKER (2048) MiB,
// CLUSTER_WATCHDOG (debug: QEMU logs a missed watchdog instead of resetting; "reset" as on hardware), CLUSTER_FRESH.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import tls from "node:tls";
import { forward } from "./forward.mjs";

const TOP = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const ARCH = process.env.ARCH || "amd64";
const NODES = Number(process.env.NODES || 3);
const CONTROLPLANES = Number(process.env.CONTROLPLANES || 1);
const NETNS = "machined-cluster";
const BRIDGE = "mclbr0";
const SUBNET = "10.5.0";
const GATEWAY = `${SUBNET}.1`;
const OUT = path.join(TOP, "build", ARCH);
const RUN = path.join(OUT, "cluster");
const REGISTRY = "127.0.0.1:5000";
const OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd";
const OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd";
const t0 = Date.now();
const say = (msg) => console.error(`[cluster +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

function fail(msg) {
  console.error(`make cluster: ${msg}`);
  process.exit(1);
}

if (ARCH !== "amd64") fail(`ARCH=${ARCH}: only amd64 is wired here (make qemu boots arm64 alone)`);
if (!Number.isInteger(NODES) || NODES < 1 || NODES > 9) fail(`NODES=${process.env.NODES}: must be 1..9`);
if (!Number.isInteger(CONTROLPLANES) || CONTROLPLANES < 1 || CONTROLPLANES > NODES) fail(`CONTROLPLANES=${process.env.CONTROLPLANES}: must be 1..NODES (${NODES})`);
if (process.getuid?.() !== 0) fail("needs root (a network namespace, taps, dnsmasq)");
for (const tool of ["qemu-system-x86_64", "qemu-img", "qemu-io", "dnsmasq", "ip", "skopeo"]) {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
  } catch {
    fail(`${tool} is not installed (make image-deps; dnsmasq is in dnsmasq-base)`);
  }
}
for (const f of ["disk.raw", `installer-${ARCH}.oci.tar`, "manifest.json"]) if (!fs.existsSync(path.join(OUT, f))) fail(`build/${ARCH}/${f} is missing: make image ARCH=${ARCH} NET_CMDLINE= first`);
for (const f of [OVMF_CODE, OVMF_VARS]) if (!fs.existsSync(f)) fail(`${f} is missing (apt-get install ovmf)`);
// The medium's boot entry and the installer's carry the build's kernel command line; a static address there
// (make image's default, for QEMU's user networking) would give every node the same one.
const report = fs.existsSync(path.join(OUT, "build-report.txt")) ? fs.readFileSync(path.join(OUT, "build-report.txt"), "utf8") : "";
if (!/^ {2}CNI plugins: .*\bflannel\b/m.test(report)) fail(`build/${ARCH} has no flannel CNI plugin (build/${ARCH}/build-report.txt): make kube-images, then make image ARCH=${ARCH} NET_CMDLINE= again`);
const builtCmdline = JSON.parse(fs.readFileSync(path.join(OUT, "manifest.json"), "utf8")).cmdline ?? "";
if (/machined\.ip=/.test(builtCmdline)) fail(`build/${ARCH} was built with a static address on its command line (${builtCmdline.match(/machined\.ip=\S+/)[0]}); the nodes take theirs by DHCP: make image ARCH=${ARCH} NET_CMDLINE=`);

const nodes = Array.from({ length: NODES }, (_, k) => {
  const i = k + 1;
  const role = i <= CONTROLPLANES ? "controlplane" : "worker";
  return {
    i,
    name: `${role === "controlplane" ? "cp" : "worker"}-${role === "controlplane" ? i : i - CONTROLPLANES}`,
    role,
    mac: `52:54:00:05:00:${String(i).padStart(2, "0")}`,
    ip: `${SUBNET}.${10 + i}`,
    host: `127.0.0.${10 + i}`,
    tap: `mcltap${i}`,
    disk: path.join(RUN, `node${i}.qcow2`),
    medium: path.join(RUN, `node${i}-medium.raw`),
    vars: path.join(RUN, `node${i}-vars.fd`),
    log: path.join(RUN, `node${i}.log`),
    mem: role === "controlplane" ? Number(process.env.CLUSTER_MEM_CP || 3072) : Number(process.env.CLUSTER_MEM_WORKER || 2048),
  };
});

const children = [];
let stopping = false;
const ip = (...args) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
const inNs = (cmd, args) => ["ip", ["netns", "exec", NETNS, cmd, ...args]];

function teardown() {
  for (const c of children) {
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  try {
    ip("netns", "del", NETNS); // takes the bridge and the taps with it
  } catch {
    // not there
  }
  for (const f of fs.existsSync(RUN) ? fs.readdirSync(RUN) : []) if (f.endsWith(".sock")) fs.rmSync(path.join(RUN, f), { force: true });
}

function stop(code) {
  if (stopping) return;
  stopping = true;
  say("stopping: VMs, dnsmasq, forwarders, the network namespace");
  teardown();
  process.exit(code);
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, () => stop(0));
process.on("exit", () => stopping || teardown());

function start(name, cmd, args, logFile) {
  const out = fs.openSync(logFile, "a");
  const child = spawn(cmd, args, { stdio: ["ignore", out, out], detached: true });
  fs.closeSync(out);
  children.push(child);
  child.on("exit", (code, signal) => {
    if (!stopping) say(`${name} exited (${signal ?? code}); see ${path.relative(TOP, logFile)}`);
  });
  return child;
}

// ------------------------------------------------------------------ network
fs.mkdirSync(RUN, { recursive: true });
if (fs.existsSync(`/run/netns/${NETNS}`)) {
  say(`removing the namespace ${NETNS} a previous run left`);
  ip("netns", "del", NETNS);
}
ip("netns", "add", NETNS);
ip("-n", NETNS, "link", "set", "lo", "up");
ip("-n", NETNS, "link", "add", BRIDGE, "type", "bridge");
ip("-n", NETNS, "addr", "add", `${GATEWAY}/24`, "dev", BRIDGE);
ip("-n", NETNS, "link", "set", BRIDGE, "up");
for (const n of nodes) {
  ip("-n", NETNS, "tuntap", "add", n.tap, "mode", "tap");
  ip("-n", NETNS, "link", "set", n.tap, "master", BRIDGE);
  ip("-n", NETNS, "link", "set", n.tap, "up");
}
say(`network namespace ${NETNS}: bridge ${BRIDGE} ${GATEWAY}/24, taps ${nodes.map((n) => n.tap).join(" ")}`);

const dnsmasqArgs = [
  "--keep-in-foreground",
  "--conf-file=/dev/null",
  "--user=root",
  `--interface=${BRIDGE}`,
  "--bind-interfaces",
  "--no-resolv",
  "--no-hosts",
  "--log-facility=-",
  "--log-dhcp",
  `--pid-file=${path.join(RUN, "dnsmasq.pid")}`,
  `--dhcp-leasefile=${path.join(RUN, "dnsmasq.leases")}`,
  "--dhcp-authoritative",
  `--dhcp-range=${SUBNET}.100,${SUBNET}.199,255.255.255.0,infinite`,
  `--dhcp-option=option:router,${GATEWAY}`,
  `--dhcp-option=option:dns-server,${GATEWAY}`,
  ...nodes.map((n) => `--dhcp-host=${n.mac},${n.ip},${n.name},infinite`),
];
fs.rmSync(path.join(RUN, "dnsmasq.leases"), { force: true });
start("dnsmasq", ...inNs("dnsmasq", dnsmasqArgs), path.join(RUN, "dnsmasq.log"));
say(`dnsmasq: DHCP on ${BRIDGE}, ${nodes.map((n) => `${n.mac} → ${n.ip}`).join(", ")} (log build/${ARCH}/cluster/dnsmasq.log)`);

// ------------------------------------------------------------------ forwarders
const sock = (name) => path.join(RUN, `${name}.sock`);
const nsPairs = [`tcp:${GATEWAY}:5000=>unix:${sock("registry")}`];
for (const n of nodes) for (const port of [50000, 6443]) nsPairs.push(`unix:${sock(`n${n.i}-${port}`)}=>tcp:${n.ip}:${port}`);
start("forwarder (cluster side)", ...inNs(process.execPath, [path.join(TOP, "image", "forward.mjs"), ...nsPairs]), path.join(RUN, "forward.log"));
await forward(`unix:${sock("registry")}`, `tcp:${REGISTRY}`);
const waitFile = async (f) => {
  for (let k = 0; k < 100 && !fs.existsSync(f); k++) await new Promise((r) => setTimeout(r, 100));
  if (!fs.existsSync(f)) fail(`the cluster-side forwarder did not create ${f} (build/${ARCH}/cluster/forward.log)`);
};
for (const n of nodes) {
  for (const port of [50000, 6443]) {
    await waitFile(sock(`n${n.i}-${port}`));
    await forward(`tcp:${n.host}:${port}`, `unix:${sock(`n${n.i}-${port}`)}`);
  }
}
say(`forwards: ${nodes.map((n) => `${n.host}:50000,6443 → ${n.ip}`).join("; ")}; ${GATEWAY}:5000 → ${REGISTRY}`);

// ------------------------------------------------------------------ installer, patch
const version = JSON.parse(fs.readFileSync(path.join(OUT, "manifest.json"), "utf8")).version;
const registryUp = await new Promise((resolve) => {
  const s = net.connect(5000, "127.0.0.1", () => (s.destroy(), resolve(true)));
  s.on("error", () => resolve(false));
});
if (!registryUp) say(`warning: no registry on ${REGISTRY} (make registry): nodes can neither install nor pull the Kubernetes images`);
else {
  execFileSync("skopeo", ["copy", "--quiet", "--dest-tls-verify=false", `oci-archive:${path.join(OUT, `installer-${ARCH}.oci.tar`)}`, `docker://${REGISTRY}/machined/installer:${version}`], { timeout: 600_000 });
  say(`installer pushed: ${REGISTRY}/machined/installer:${version} (the nodes: registry.local/machined/installer:${version})`);
}
const mirror = `[http://${GATEWAY}:5000]`;
const patch = `machine:
  certSANs: [${nodes.map((n) => n.host).join(", ")}]
  network:
    interfaces:
      - interface: eth0
        dhcp: true
  registries:
    mirrors:
      registry.k8s.io: { endpoints: ${mirror} }
      ghcr.io: { endpoints: ${mirror} }
      docker.io: { endpoints: ${mirror} }
      registry.local: { endpoints: ${mirror} }
cluster:
  apiServer:
    certSANs: [${nodes.filter((n) => n.role === "controlplane").map((n) => n.host).join(", ")}]
`;
fs.writeFileSync(path.join(RUN, "patch.yaml"), patch);
fs.writeFileSync(path.join(RUN, "installer"), `registry.local/machined/installer:${version}\n`);

// ------------------------------------------------------------------ VMs
// Firmware boot (OVMF), as on hardware: until a node is installed it boots the medium (a copy of disk.raw), and the
// reboot after its install brings it back from its install disk alone (the medium detached, as an operator pulls the
// USB stick); from then on every reboot (upgrade, rollback, fallback) goes through the install disk's boot loader, its
// A/B entries and boot counting. Every reboot ends its QEMU (-no-reboot) and the node is booted again from what its
// disk holds then: a reset wipes the disk's partition table, and the node comes back from the medium in maintenance
// mode, as a machine whose disk is blank falls through to its boot stick, instead of stopping in the firmware's shell.
if (process.env.CLUSTER_FRESH) for (const n of nodes) for (const f of [n.disk, n.vars]) fs.rmSync(f, { force: true });
/** The install disk has a partition table (GPT's "EFI PART" at LBA 1): the installer wrote it and no reset wiped it. */
const installed = (n) =>
  fs.existsSync(n.disk) && /: +45 46 49 20 50 41 52 54/.test(execFileSync("qemu-io", ["-U", "-r", "-f", "qcow2", "-c", "read -v 512 8", n.disk], { encoding: "utf8" }));
function boot(n) {
  if (stopping) return;
  if (!fs.existsSync(n.disk)) execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", n.disk, "8G"]);
  if (!fs.existsSync(n.vars)) fs.copyFileSync(OVMF_VARS, n.vars);
  const fromMedium = !installed(n);
  if (fromMedium) execFileSync("cp", ["--sparse=always", path.join(OUT, "disk.raw"), n.medium]);
  fs.appendFileSync(n.log, `\n[make cluster] booting ${n.name} from ${fromMedium ? "the medium (maintenance mode)" : "its install disk"}\n`);
  // prettier-ignore
  const args = [
    "-M", "q35", "-cpu", "max", "-accel", "tcg", "-m", String(n.mem), "-smp", "2",
    "-display", "none", "-chardev", `file,id=console,path=${n.log},append=on`, "-serial", "chardev:console", "-monitor", "none",
    "-netdev", `tap,id=net0,ifname=${n.tap},script=no,downscript=no`, "-device", `virtio-net-pci,netdev=net0,mac=${n.mac}`,
    "-drive", `if=pflash,format=raw,readonly=on,file=${OVMF_CODE}`, "-drive", `if=pflash,format=raw,file=${n.vars}`,
    "-drive", `if=none,id=install,format=qcow2,file=${n.disk}`, "-device", `virtio-blk-pci,drive=install,serial=install,bootindex=${fromMedium ? 1 : 0}`,
    ...(fromMedium ? ["-drive", `if=none,id=boot,format=raw,file=${n.medium}`, "-device", "virtio-blk-pci,drive=boot,serial=boot,bootindex=0"] : []),
    "-no-reboot",
    "-device", "i6300esb", "-watchdog-action", process.env.CLUSTER_WATCHDOG || "debug", "-device", "virtio-rng-pci",
  ];
  const child = start(`VM ${n.name}`, ...inNs("qemu-system-x86_64", args), path.join(RUN, `node${n.i}.qemu.log`));
  child.on("exit", () => {
    if (stopping) return;
    if (fromMedium) fs.rmSync(n.medium, { force: true });
    say(fromMedium && installed(n) ? `${n.name}: installed; booting it from its install disk` : `${n.name}: QEMU ended; booting it again`);
    setTimeout(() => boot(n), 1000);
  });
}
for (const n of nodes) {
  fs.writeFileSync(n.log, "");
  boot(n);
}
say(`booting ${NODES} VMs (${CONTROLPLANES} control plane${CONTROLPLANES > 1 ? "s" : ""}); serial consoles: build/${ARCH}/cluster/node<i>.log`);
console.error(
  nodes.map((n) => `  node${n.i}  ${n.name.padEnd(9)} ${n.role.padEnd(12)} ${n.mac}  ${n.ip.padEnd(10)}  talosctl -n ${n.host}   (${n.mem} MiB)`).join("\n"),
);

/** The maintenance API answers a TLS handshake (QEMU and the forwarders accept before the guest listens). */
const apiUp = (host) =>
  new Promise((resolve) => {
    const s = tls.connect({ host, port: 50000, rejectUnauthorized: false, timeout: 10_000 }, () => (s.destroy(), resolve(true)));
    s.on("error", () => resolve(false));
    s.on("timeout", () => (s.destroy(), resolve(false)));
  });
const pending = new Set(nodes);
while (pending.size && !stopping) {
  for (const n of [...pending]) {
    if (await apiUp(n.host)) {
      pending.delete(n);
      const leased = fs.readFileSync(n.log, "latin1").match(/network: (\S+) (\S+) .*by DHCP/);
      say(`${n.name}: API up on ${n.host}:50000${leased ? ` (${leased[1]} ${leased[2]} by DHCP)` : ""}`);
    }
  }
  if (pending.size) await new Promise((r) => setTimeout(r, 3000));
}
say(`all ${NODES} nodes answer; config patch build/${ARCH}/cluster/patch.yaml, installer registry.local/machined/installer:${version}. Ctrl-C stops the cluster.`);
await new Promise(() => {});
