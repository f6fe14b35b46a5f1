#!/usr/bin/env node
// Step 3: assemble the two trees from build/<arch>/work/sysroot:
//   rootfs/  -> rootfs.sqsh: the complete read-only root (node, agent, containerd, runc, etcd, ip, mkfs, CNI,
//               curated kernel modules, /etc defaults from the repo's rootfs/)
//   stage/   -> the early initramfs: only what /init needs to mount rootfs.sqsh (node, agent, loop/squashfs/...)
// Libraries are found by following DT_NEEDED through the sysroot (readelf), so a package update that adds a
// dependency fails here, at build time, instead of at boot.
// Env (from image/env.sh): ARCH TOP SYSROOT ROOTFS STAGE TRIPLET NODE_ARCH; AGENT = bundle path
// (default dist/machined.mjs); AGENT_EXTERNALS = node_modules packages the bundle keeps external ("koffi").
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const env = (k, d) => process.env[k] ?? d ?? die(`missing env ${k}`);
function die(msg) {
  console.error(`mkroot: ${msg}`);
  process.exit(1);
}
const ARCH = env("ARCH");
const TOP = env("TOP");
const SYSROOT = env("SYSROOT");
const ROOTFS = env("ROOTFS");
const STAGE = env("STAGE");
const TRIPLET = env("TRIPLET");
const NODE_ARCH = env("NODE_ARCH");
const STRIP = env("STRIP", ARCH === "arm64" ? "aarch64-linux-gnu-strip" : "strip");
const AGENT = env("AGENT", path.join(TOP, "dist/machined.mjs"));
const EXTERNALS = env("AGENT_EXTERNALS", "koffi").split(/[ ,]+/).filter(Boolean);
const KVER = fs.readFileSync(path.join(TOP, "build/cache", ARCH, "kernel-release"), "utf8").trim();
const VERSION = env("IMAGE_VERSION", "dev");

if (!fs.existsSync(AGENT)) die(`agent bundle ${AGENT} not found: run \`npm run build\` or pass AGENT=/path/to/bundle.mjs`);

// Programs taken from the Debian packages: sysroot path -> path in the image (merged /usr).
const PROGRAMS = [
  "usr/bin/containerd",
  "usr/bin/containerd-shim-runc-v2",
  "usr/bin/ctr",
  "usr/sbin/runc",
  "usr/bin/etcd",
  "usr/bin/etcdctl",
  "bin/ip",
  "sbin/mkfs.xfs",
  "sbin/xfs_repair",
  "usr/sbin/xfs_growfs",
  "sbin/mkfs.fat",
  "sbin/mkfs.vfat", // the name the agent calls (src/boot/mkfs.ts)
  "sbin/fsck.fat",
];
// Install tools (src/boot: GPT re-read, STATE ext4, ESP files through mtools, blkid probe), from the
// e2fsprogs, util-linux and mtools packages in image/debs.txt. Should a mirror lack one of them, a build for the
// host's own architecture (Debian 12 as well) falls back to the host's copy, with its libraries.
// [image path, sysroot/host path]
const INSTALL_TOOLS = [
  ["usr/sbin/mkfs.ext4", "sbin/mke2fs"],
  ["usr/sbin/blockdev", "sbin/blockdev"],
  ["usr/sbin/blkid", "sbin/blkid"],
  ...["mtools", "mcopy", "mdir", "mdel", "mmd", "mmove"].map((n) => [`usr/bin/${n}`, "usr/bin/mtools"]),
];
const HOST_ARCH = execFileSync("dpkg", ["--print-architecture"], { encoding: "utf8" }).trim();
const CNI_SRC = "usr/lib/cni"; // Debian's containernetworking-plugins location
const CNI_DIR = "opt/cni/bin"; // where kubelet, containerd and CNI installers look (the agent overlays /opt)

// Kernel modules left out of rootfs.sqsh: hardware an API-only server OS never drives (sound, GPUs, cameras,
// radios, input devices). Whatever a kept module depends on is added back by the closure below.
const MODULE_EXCLUDES = [
  "kernel/sound/",
  "kernel/lib/test_",
  ...[
    "gpu", "media", "staging", "iio", "comedi", "isdn", "bluetooth", "net/wireless", "input", "hid", "video", "mtd",
    "w1", "leds", "nfc", "infiniband", "atm", "parport", "pcmcia", "firewire", "memstick", "accessibility", "gnss",
    "android", "soundwire", "slimbus", "target", "platform/chrome", "platform/surface", "net/can", "net/wan",
    "net/wwan", "net/hamradio", "net/arcnet", "net/fddi", "net/ieee802154", "net/plip", "net/slip", "net/ppp",
  ].map((d) => `kernel/drivers/${d}/`),
  ...[
    "ocfs2", "gfs2", "dlm", "nfsd", "smb/server", "afs", "ubifs", "jffs2", "nilfs2", "reiserfs", "jfs", "orangefs",
    "hfs", "hfsplus", "hpfs", "ufs", "affs", "befs", "adfs", "omfs", "qnx4", "qnx6", "freevxfs", "efs", "bfs", "romfs",
    "sysv", "minix", "coda", "vboxsf", "ecryptfs", "zonefs",
  ].map((d) => `kernel/fs/${d}/`),
  ...[
    "bluetooth", "mac80211", "wireless", "nfc", "ieee802154", "mac802154", "6lowpan", "atm", "appletalk", "ax25",
    "rose", "netrom", "x25", "lapb", "phonet", "rds", "tipc", "can", "batman-adv", "caif", "qrtr", "rxrpc", "kcm",
  ].map((d) => `kernel/net/${d}/`),
];
// The early initramfs carries only what mounting rootfs.sqsh needs, plus the watchdogs so the agent can arm one
// before anything else can hang; every other module comes from the full set inside rootfs.sqsh.
const STAGE_MODULES = ["loop", "squashfs", "overlay", "softdog", "i6300esb"];

// ---------------------------------------------------------------- helpers
const rel = (p) => p.replace(/^\/+/, "");
function mkdirp(p) {
  fs.mkdirSync(p, { recursive: true });
}
function copy(src, dst, mode) {
  mkdirp(path.dirname(dst));
  fs.copyFileSync(src, dst);
  fs.chmodSync(dst, mode ?? fs.statSync(src).mode & 0o7777);
}
function symlink(target, at) {
  mkdirp(path.dirname(at));
  fs.rmSync(at, { force: true });
  fs.symlinkSync(target, at);
}
/** Resolves symlinks inside the sysroot (absolute link targets are relative to the sysroot, not the host). */
function resolveIn(root, p, depth = 0) {
  if (depth > 40) die(`symlink loop at ${p}`);
  const parts = rel(p).split("/");
  let cur = "";
  for (let i = 0; i < parts.length; i++) {
    const next = cur ? `${cur}/${parts[i]}` : parts[i];
    const st = fs.lstatSync(path.join(root, next), { throwIfNoEntry: false });
    if (!st) return null;
    if (st.isSymbolicLink()) {
      const t = fs.readlinkSync(path.join(root, next));
      const base = t.startsWith("/") ? rel(t) : path.posix.normalize(path.posix.join(path.posix.dirname(next), t));
      return resolveIn(root, [base, ...parts.slice(i + 1)].join("/"), depth + 1);
    }
    cur = next;
  }
  return cur;
}
/** Merged-/usr: /bin, /sbin, /lib of a Debian package land under /usr in the image. */
const usrPath = (p) => rel(p).replace(/^(bin|sbin|lib|lib64)\//, "usr/$1/");

function readelf(file, flag) {
  return execFileSync("readelf", [flag, "-W", file], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
}
function isElf(file) {
  const fd = fs.openSync(file, "r");
  const b = Buffer.alloc(4);
  fs.readSync(fd, b, 0, 4, 0);
  fs.closeSync(fd);
  return b.toString("latin1") === "\x7fELF";
}
const LIB_DIRS = [`lib/${TRIPLET}`, `usr/lib/${TRIPLET}`, "lib", "usr/lib"];
let hostLibs = false; // set when install tools came from the host: their libraries may only exist there
function findLib(soname) {
  for (const d of LIB_DIRS) {
    const r = resolveIn(SYSROOT, `${d}/${soname}`);
    if (r && fs.statSync(path.join(SYSROOT, r)).isFile()) return r;
  }
  if (hostLibs) {
    for (const d of LIB_DIRS) {
      const r = resolveIn("/", `${d}/${soname}`);
      if (r && fs.statSync(path.join("/", r)).isFile()) return path.relative(SYSROOT, path.join("/", r));
    }
  }
  return null;
}

/** Copies the shared libraries (and the ELF interpreter) that the ELF files in `files` need into `root`. */
function addLibraries(root, files) {
  const seen = new Set();
  const queue = [...files];
  const missing = [];
  while (queue.length) {
    const f = queue.shift();
    if (!isElf(f)) continue;
    const dyn = readelf(f, "-d");
    for (const m of dyn.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)) {
      const so = m[1];
      if (seen.has(so)) continue;
      seen.add(so);
      const src = findLib(so);
      if (!src) {
        missing.push(`${so} (needed by ${path.relative(root, f)})`);
        continue;
      }
      const dst = path.join(root, "usr/lib", TRIPLET, so);
      copy(path.join(SYSROOT, src), dst);
      queue.push(dst);
    }
    const interp = /Requesting program interpreter: ([^\]]+)\]/.exec(readelf(f, "-l"))?.[1];
    if (interp && !seen.has(interp)) {
      seen.add(interp);
      const src = resolveIn(SYSROOT, interp) ?? die(`interpreter ${interp} not in sysroot`);
      const real = path.join(root, "usr/lib", TRIPLET, path.basename(interp));
      copy(path.join(SYSROOT, src), real);
      // keep the exact PT_INTERP path valid: /lib64/ld-linux-x86-64.so.2 or /lib/ld-linux-aarch64.so.1
      const at = path.join(root, usrPath(interp));
      if (at !== real) symlink(path.relative(path.dirname(at), real), at);
    }
  }
  if (missing.length) die(`shared libraries not found in the sysroot (add their package to image/debs.txt):\n  ${missing.join("\n  ")}`);
  return seen.size;
}

/** The skeleton both trees share: merged-/usr links and the mount points PID 1 uses. */
function skeleton(root, extraDirs) {
  fs.rmSync(root, { recursive: true, force: true });
  for (const d of ["usr/bin", "usr/sbin", "usr/lib", "dev", "proc", "sys", "run", "tmp", "etc", ...extraDirs]) mkdirp(path.join(root, d));
  symlink("usr/bin", path.join(root, "bin"));
  symlink("usr/sbin", path.join(root, "sbin"));
  symlink("usr/lib", path.join(root, "lib"));
  if (ARCH === "amd64") {
    mkdirp(path.join(root, "usr/lib64"));
    symlink("usr/lib64", path.join(root, "lib64"));
  }
}

function installNodeAndAgent(root) {
  const node = path.join(root, "usr/bin/node");
  execFileSync(STRIP, ["-o", node, path.join(SYSROOT, "opt/node/node")]);
  fs.chmodSync(node, 0o755);
  copy(path.join(SYSROOT, "opt/node/LICENSE"), path.join(root, "usr/share/doc/node/LICENSE"), 0o644);
  const lib = path.join(root, "usr/lib/machined");
  copy(AGENT, path.join(lib, "machined.mjs"), 0o644);
  // The bill of materials `npm run build` writes beside the bundle (SBOMItems reads it from there).
  const sbom = path.join(path.dirname(AGENT), "sbom.json");
  if (fs.existsSync(sbom)) copy(sbom, path.join(lib, "sbom.json"), 0o644);
  // scripts/build.mjs: the launcher above runs the bundle machined.cjs next to it, with its V8 code cache. The cache
  // is written by this host's node, so it goes only into an image of this host's architecture: V8's checks do not
  // are not known to cover the architecture (the arm64 PID 1 died of SIGSEGV at start with the amd64 cache in).
  const sameArch = process.arch === NODE_ARCH;
  for (const f of sameArch ? ["machined.cjs", "machined.cjs.cache"] : ["machined.cjs"]) {
    if (fs.existsSync(path.join(path.dirname(AGENT), f))) copy(path.join(path.dirname(AGENT), f), path.join(lib, f), 0o644);
  }
  // Packages the bundle keeps external because they carry native code: copy them with only this arch's binary.
  for (const name of EXTERNALS) {
    const src = path.join(TOP, "node_modules", name);
    if (!fs.existsSync(src)) {
      console.error(`mkroot: warning: external package ${name} not in node_modules; the agent must not need it`);
      continue;
    }
    fs.cpSync(src, path.join(lib, "node_modules", name), {
      recursive: true,
      filter: (s) => {
        const r = path.relative(src, s);
        if (/^(doc|src|test|.*\.d\.ts|.*\.md)$/.test(r)) return false;
        const m = /^build\/[^/]+\/([^/]+)/.exec(r); // koffi: build/koffi/<platform_arch>/koffi.node
        return !m || m[1] === `linux_${NODE_ARCH}`;
      },
    });
  }
  const init = path.join(TOP, "rootfs/init");
  copy(init, path.join(root, "init"), 0o755);
  writeOsRelease(root);
  return [node];
}

function writeOsRelease(root) {
  const tpl = fs.readFileSync(path.join(TOP, "rootfs/etc/os-release"), "utf8");
  const dst = path.join(root, "etc/os-release");
  mkdirp(path.dirname(dst));
  fs.writeFileSync(dst, tpl.replaceAll("@VERSION@", VERSION).replaceAll("@ARCH@", ARCH));
}

// ---------------------------------------------------------------- modules
const MOD_SRC = path.join(SYSROOT, "lib/modules", KVER);
function parseDep() {
  const deps = new Map();
  for (const line of fs.readFileSync(path.join(MOD_SRC, "modules.dep"), "utf8").split("\n")) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    deps.set(line.slice(0, i), line.slice(i + 1).trim().split(/\s+/).filter(Boolean));
  }
  return deps;
}
const modName = (p) => path.basename(p).replace(/\.ko(\..*)?$/, "").replaceAll("-", "_");
function closure(deps, roots) {
  const out = new Set();
  const visit = (m) => {
    if (out.has(m)) return;
    out.add(m);
    for (const d of deps.get(m) ?? []) visit(d);
  };
  roots.forEach(visit);
  return out;
}
function installModules(root, set) {
  const dst = path.join(root, "usr/lib/modules", KVER);
  let bytes = 0;
  for (const m of set) {
    copy(path.join(MOD_SRC, m), path.join(dst, m), 0o644);
    bytes += fs.statSync(path.join(MOD_SRC, m)).size;
  }
  for (const f of ["modules.order", "modules.builtin", "modules.builtin.modinfo"]) copy(path.join(MOD_SRC, f), path.join(dst, f), 0o644);
  execFileSync("depmod", ["-b", root, KVER]); // writes modules.dep/.alias/... for exactly this subset
  return bytes;
}

// ---------------------------------------------------------------- rootfs.sqsh tree
const deps = parseDep();
// The stage is built first: rootfs.sqsh reuses its node binary and agent instead of carrying a second copy.
skeleton(STAGE, ["sysroot"]);
const stageElves = installNodeAndAgent(STAGE);
addLibraries(STAGE, stageElves);

// /etc/cni, /etc/kubernetes, /usr/libexec/kubernetes, /opt and /etc/cri get writable overlays at boot
// (src/host/kubernetes-node.ts): they must exist here as the lower layers.
skeleton(ROOTFS, ["var", "system", "mnt", "etc/cni/net.d", "etc/cri/conf.d", "etc/kubernetes", "usr/libexec/kubernetes", "opt/cni/bin", "usr/lib/machined"]);
// Mount-point stubs: while switching root the agent bind-mounts the stage's /usr/bin/node and /usr/lib/machined
// over these, so the ~86 MB node binary exists once (in the stage) and process.execPath stays valid after the
// switch. Node's libraries (libstdc++, libgcc_s) are copied so the bound binary runs in the new root.
fs.writeFileSync(path.join(ROOTFS, "usr/bin/node"), "");
fs.chmodSync(path.join(ROOTFS, "usr/bin/node"), 0o755);
copy(path.join(TOP, "rootfs/init"), path.join(ROOTFS, "init"), 0o755);
writeOsRelease(ROOTFS);
const elves = [...stageElves];
for (const p of PROGRAMS) {
  const src = resolveIn(SYSROOT, p) ?? die(`${p} not found in the sysroot`);
  const dst = path.join(ROOTFS, usrPath(p));
  copy(path.join(SYSROOT, src), dst);
  elves.push(dst);
}
const toolsFrom = [];
for (const [dst, src] of INSTALL_TOOLS) {
  let from = SYSROOT;
  let r = resolveIn(SYSROOT, src);
  if (!r && ARCH === HOST_ARCH) {
    r = resolveIn("/", src);
    from = "/";
    hostLibs = true;
  }
  if (!r) {
    console.error(`mkroot: warning: ${src} is neither in the sysroot nor (same arch) on the host: installing onto disks will fail in this image`);
    continue;
  }
  copy(path.join(from, r), path.join(ROOTFS, dst));
  elves.push(path.join(ROOTFS, dst));
  if (from === "/") toolsFrom.push(path.basename(dst));
}
// mtools converts FAT names through iconv (codepage 850 by default): glibc's gconv modules for it.
{
  const gconv = `usr/lib/${TRIPLET}/gconv`;
  for (const f of ["gconv-modules", "gconv-modules.cache", "IBM850.so", "IBM437.so"]) {
    const src = path.join(SYSROOT, gconv, f);
    if (fs.existsSync(src)) copy(src, path.join(ROOTFS, gconv, f), 0o644);
  }
  const d = path.join(SYSROOT, gconv, "gconv-modules.d");
  if (fs.existsSync(d)) for (const f of fs.readdirSync(d)) copy(path.join(d, f), path.join(ROOTFS, gconv, "gconv-modules.d", f), 0o644);
}
if (toolsFrom.length) console.error(`mkroot: note: install tools from the host (not in the sysroot): ${toolsFrom.join(" ")}`);
if (fs.existsSync("/etc/mke2fs.conf") && !fs.existsSync(path.join(SYSROOT, "etc/mke2fs.conf"))) copy("/etc/mke2fs.conf", path.join(ROOTFS, "etc/mke2fs.conf"), 0o644);
else if (fs.existsSync(path.join(SYSROOT, "etc/mke2fs.conf"))) copy(path.join(SYSROOT, "etc/mke2fs.conf"), path.join(ROOTFS, "etc/mke2fs.conf"), 0o644);
for (const f of fs.readdirSync(path.join(SYSROOT, CNI_SRC))) {
  copy(path.join(SYSROOT, CNI_SRC, f), path.join(ROOTFS, CNI_DIR, f));
  elves.push(path.join(ROOTFS, CNI_DIR, f));
}
// The CNI plugins `make kube-images` builds (bridge, loopback, host-local, portmap and the flannel plugin Debian lacks,
// static Go binaries) replace Debian's of the same name: the flannel manifest's CNI chain needs them.
{
  const cache = path.join(process.env.MACHINED_CACHE ?? "/var/cache/machined", "kube-images", "cni");
  const dirs = fs.existsSync(cache) ? fs.readdirSync(cache).filter((d) => d.endsWith(`-${ARCH}`)).sort() : [];
  const tar = dirs.length ? path.join(cache, dirs[dirs.length - 1], "cni-plugins.tar") : undefined;
  if (tar && fs.existsSync(tar)) {
    execFileSync("tar", ["-xf", tar, "-C", path.join(ROOTFS, CNI_DIR), "--no-same-owner"]);
    console.error(`mkroot: CNI plugins from ${tar}: ${execFileSync("tar", ["-tf", tar], { encoding: "utf8" }).split("\n").filter((l) => l && !l.endsWith("/")).map((l) => path.basename(l)).join(" ")}`);
  } else {
    console.error(`mkroot: warning: no CNI plugin archive under ${cache} (make kube-images): /opt/cni/bin has Debian's plugins only, without flannel; pods get no network`);
  }
}
const libCount = addLibraries(ROOTFS, elves);

// static files from the repo (init and os-release are handled above)
fs.cpSync(path.join(TOP, "rootfs"), ROOTFS, {
  recursive: true,
  verbatimSymlinks: true,
  filter: (s) => !["init", "etc/os-release"].includes(path.relative(path.join(TOP, "rootfs"), s)),
});
// TLS roots: what update-ca-certificates would generate, for containerd's registry pulls
const caDir = path.join(SYSROOT, "usr/share/ca-certificates/mozilla");
const bundle = fs.readdirSync(caDir).sort().map((f) => fs.readFileSync(path.join(caDir, f), "utf8").trimEnd() + "\n");
mkdirp(path.join(ROOTFS, "etc/ssl/certs"));
fs.writeFileSync(path.join(ROOTFS, "etc/ssl/certs/ca-certificates.crt"), bundle.join(""));

const keep = [...deps.keys()].filter((m) => !MODULE_EXCLUDES.some((x) => m.startsWith(x)));
const rootMods = closure(deps, keep);
const rootModBytes = installModules(ROOTFS, rootMods);

// ---------------------------------------------------------------- early initramfs modules
const byName = new Map([...deps.keys()].map((m) => [modName(m), m]));
const builtin = new Set(
  fs.readFileSync(path.join(MOD_SRC, "modules.builtin"), "utf8").split("\n").filter(Boolean).map(modName),
);
const stageRoots = [];
for (const n of STAGE_MODULES) {
  if (byName.has(n)) stageRoots.push(byName.get(n));
  else if (!builtin.has(n)) console.error(`mkroot: note: module ${n} does not exist for ${KVER}; skipped`);
}
const stageMods = closure(deps, stageRoots);
installModules(STAGE, stageMods);

console.error(
  `mkroot: rootfs: ${elves.length - 1} programs, ${libCount} libraries, ${rootMods.size}/${deps.size} modules ` +
    `(${(rootModBytes / 2 ** 20).toFixed(1)} MiB); stage: ${stageMods.size} modules [${[...stageMods].map(modName).join(" ")}]`,
);
