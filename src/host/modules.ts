/**
 * Kernel module loading without kmod: parse the depmod files of the running kernel (modules.dep, modules.alias,
 * modules.softdep, modules.builtin), resolve load order, and load with finit_module(2) through `Syscalls`.
 *
 * Why not ship modprobe: the image has no shell or userland beyond what the agent runs, and module loading is on
 * the boot-critical path where we want typed errors and logs. The order rule is the one kmod uses: a module's
 * dependencies (modules.dep lists the full transitive set) load before it, softdep "pre:" modules before those,
 * "post:" modules after. Loading virtio before virtio_ring fails with ENOENT symbols, which is why order matters.
 *
 * Coldplug: every device the kernel has already found exposes /sys/bus/<bus>/devices/<dev>/modalias; matching
 * those strings against the (glob) patterns of modules.alias names the drivers to load. Loading a bus driver
 * (virtio_pci) makes new devices appear (virtio0, virtio1 ...), so coldplug repeats until a pass finds nothing new.
 */
import { readdirSync, readFileSync } from "node:fs";
import { release } from "node:os";
import type { Syscalls } from "./syscalls.js";

export type ModuleSyscalls = Pick<Syscalls, "finitModule">;

export interface ModuleEntry {
  name: string;
  /** path relative to the modules directory, e.g. kernel/drivers/virtio/virtio.ko */
  path: string;
  /** dependency names as listed in modules.dep (full transitive set, in depmod's order) */
  deps: string[];
}

export interface Alias {
  pattern: string;
  module: string;
  /** the pattern up to its first wildcard: a cheap startsWith filter before the glob (modules.alias has ~14k lines) */
  prefix: string;
  /**
   * the longest wildcard-free run of the pattern, which the modalias must contain: the prefix alone does not
   * help for device-tree aliases ("of:N*T*Carm,pl011"), thousands of which share the prefix "of:N"
   */
  literal: string;
}

export interface SoftDep {
  pre: string[];
  post: string[];
}

export interface ModuleIndex {
  modules: Map<string, ModuleEntry>;
  aliases: Alias[];
  softdeps: Map<string, SoftDep>;
  builtin: Set<string>;
}

export class ModuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModuleError";
  }
}

/** Module names are compared with '-' and '_' treated alike, as the kernel does. */
export const moduleName = (s: string): string => {
  const base = s.slice(s.lastIndexOf("/") + 1).replace(/\.ko(\.(xz|gz|zst))?$/, "");
  return base.replaceAll("-", "_");
};

/** modules.dep: "kernel/a/x.ko: kernel/b/y.ko kernel/c/z.ko" */
export function parseModulesDep(text: string): Map<string, ModuleEntry> {
  const out = new Map<string, ModuleEntry>();
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const path = line.slice(0, colon).trim();
    const deps = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(moduleName);
    const name = moduleName(path);
    out.set(name, { name, path, deps });
  }
  return out;
}

/** modules.alias: "alias <glob pattern> <module>", comments start with '#'. */
export function parseModulesAlias(text: string): Alias[] {
  const out: Alias[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f[0] !== "alias" || f.length < 3) continue;
    const wild = f[1].search(/[*?[]/);
    const literal = f[1].split(/\[[^\]]*\]|[*?]/).reduce((a, b) => (b.length > a.length ? b : a), "");
    out.push({ pattern: f[1], module: moduleName(f[2]), prefix: wild < 0 ? f[1] : f[1].slice(0, wild), literal });
  }
  return out;
}

/** modules.softdep: "softdep <module> pre: a b post: c" */
export function parseModulesSoftdep(text: string): Map<string, SoftDep> {
  const out = new Map<string, SoftDep>();
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f[0] !== "softdep" || f.length < 3) continue;
    const dep: SoftDep = out.get(moduleName(f[1])) ?? { pre: [], post: [] };
    let list: string[] | null = null;
    for (const w of f.slice(2)) {
      if (w === "pre:") list = dep.pre;
      else if (w === "post:") list = dep.post;
      else list?.push(moduleName(w));
    }
    out.set(moduleName(f[1]), dep);
  }
  return out;
}

/** modules.builtin: one path per line; those modules are part of the kernel image and never loaded. */
export function parseModulesBuiltin(text: string): Set<string> {
  return new Set(
    text
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .map(moduleName),
  );
}

const globCache = new Map<string, RegExp>();
/** fnmatch(3) as kmod uses it for aliases: '*', '?' and '[...]' classes ('!' or '^' negates); no path rules. */
export function globToRegExp(pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (re) return re;
  let src = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") src += "[\\s\\S]*";
    else if (c === "?") src += "[\\s\\S]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2); // a ']' right after '[' (or '[!') is literal
      if (end < 0) {
        src += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end);
      let neg = false;
      if (body[0] === "!" || body[0] === "^") {
        neg = true;
        body = body.slice(1);
      }
      src += `[${neg ? "^" : ""}${body.replace(/[\\\]]/g, "\\$&")}]`;
      i = end;
    } else src += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  re = new RegExp(src + "$");
  globCache.set(pattern, re);
  return re;
}

/** Modules whose alias pattern matches `modalias` (file order, each once). */
export function matchAlias(index: Pick<ModuleIndex, "aliases">, modalias: string): string[] {
  const out: string[] = [];
  for (const a of index.aliases) {
    if (!modalias.startsWith(a.prefix) || !modalias.includes(a.literal) || out.includes(a.module)) continue;
    if (globToRegExp(a.pattern).test(modalias)) out.push(a.module);
  }
  return out;
}

/**
 * The order to load `names` in: each module after its softdep "pre:" modules and its modules.dep dependencies,
 * "post:" modules after it, every module once, builtins left out. Unknown names throw ModuleError.
 */
export function resolveLoadOrder(index: ModuleIndex, names: string[]): ModuleEntry[] {
  const order: ModuleEntry[] = [];
  const done = new Set<string>();
  const visiting = new Set<string>();
  const visit = (raw: string, wantedBy: string | null, optional: boolean): void => {
    const name = moduleName(raw);
    if (done.has(name) || visiting.has(name) || index.builtin.has(name)) return;
    const entry = index.modules.get(name);
    if (!entry) {
      if (optional) {
        // softdeps may name an alias ("softdep libcrc32c pre: crc32c"); one this kernel lacks is not an error
        for (const m of matchAlias(index, name)) if (m !== name) visit(m, wantedBy, true);
        return;
      }
      throw new ModuleError(
        wantedBy
          ? `module ${name} (needed by ${wantedBy}) is not in modules.dep`
          : `module ${name} is not in modules.dep of this kernel`,
      );
    }
    visiting.add(name);
    const soft = index.softdeps.get(name);
    for (const p of soft?.pre ?? []) visit(p, name, true);
    // modules.dep lists the transitive set with the deepest dependency last, so walk it backwards
    for (const d of [...entry.deps].reverse()) visit(d, name, false);
    visiting.delete(name);
    done.add(name);
    order.push(entry);
    for (const p of soft?.post ?? []) visit(p, name, true);
  };
  for (const n of names) visit(n, null, false);
  return order;
}

/** "virtio_net.napi_tx=1 foo.bar=2" on the kernel cmdline -> parameters per module (modprobe does this too). */
export function cmdlineModuleParams(cmdline: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const word of cmdline.trim().split(/\s+/)) {
    const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+=.*)$/.exec(word);
    if (!m) continue;
    const name = moduleName(m[1]);
    out.set(name, out.has(name) ? `${out.get(name)} ${m[2]}` : m[2]);
  }
  return out;
}

/** File access for the loader, so tests run on an in-memory tree. */
export interface ModuleFs {
  /** file contents, or null if it does not exist */
  readFile(path: string): string | null;
  /** entry names, or [] if the folder does not exist */
  readdir(path: string): string[];
}

export const nodeModuleFs: ModuleFs = {
  readFile(path) {
    try {
      return readFileSync(path, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR" || code === "ENODEV") return null;
      throw err;
    }
  },
  readdir(path) {
    try {
      return readdirSync(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return [];
      throw err;
    }
  },
};

/** Reads the depmod files under `dir` (e.g. /usr/lib/modules/6.1.0-57-amd64). */
export function readModuleIndex(dir: string, fs: ModuleFs = nodeModuleFs): ModuleIndex {
  const dep = fs.readFile(`${dir}/modules.dep`);
  if (dep === null) throw new ModuleError(`${dir}/modules.dep not found: no modules for this kernel in the image`);
  return {
    modules: parseModulesDep(dep),
    aliases: parseModulesAlias(fs.readFile(`${dir}/modules.alias`) ?? ""),
    softdeps: parseModulesSoftdep(fs.readFile(`${dir}/modules.softdep`) ?? ""),
    builtin: parseModulesBuiltin(fs.readFile(`${dir}/modules.builtin`) ?? ""),
  };
}

/** Every /sys/bus/<bus>/devices/<dev>/modalias value the kernel currently exposes. */
export function readModaliases(fs: ModuleFs = nodeModuleFs, sysfs = "/sys"): string[] {
  const out = new Set<string>();
  for (const bus of fs.readdir(`${sysfs}/bus`)) {
    for (const dev of fs.readdir(`${sysfs}/bus/${bus}/devices`)) {
      const alias = fs.readFile(`${sysfs}/bus/${bus}/devices/${dev}/modalias`)?.trim();
      if (alias) out.add(alias);
    }
  }
  return [...out];
}

export interface LoadReport {
  /** modules loaded by this call, in load order */
  loaded: string[];
  /** modules that were already loaded (listed in /proc/modules or EEXIST) */
  present: string[];
  /** modules that failed, with the reason; their dependants are not attempted */
  failed: { name: string; error: string }[];
}

export interface ModuleLoaderOptions {
  sys: ModuleSyscalls;
  fs?: ModuleFs;
  /** modules folder; defaults to /usr/lib/modules/<uname -r> */
  dir?: string;
  /** contents of /proc/cmdline for <module>.<param>= parameters; read from /proc when omitted */
  cmdline?: string;
}

/** Loads modules by name or by coldplug, tracking what is loaded so each module is tried once. */
export class ModuleLoader {
  readonly dir: string;
  readonly index: ModuleIndex;
  private readonly fs: ModuleFs;
  private readonly sys: ModuleSyscalls;
  private readonly params: Map<string, string>;
  private readonly present = new Set<string>();
  private readonly broken = new Map<string, string>();

  constructor(opts: ModuleLoaderOptions) {
    this.fs = opts.fs ?? nodeModuleFs;
    this.sys = opts.sys;
    this.dir = opts.dir ?? `/usr/lib/modules/${release()}`;
    this.index = readModuleIndex(this.dir, this.fs);
    this.params = cmdlineModuleParams(opts.cmdline ?? this.fs.readFile("/proc/cmdline") ?? "");
    for (const line of (this.fs.readFile("/proc/modules") ?? "").split("\n")) {
      const name = line.split(" ")[0];
      if (name) this.present.add(moduleName(name));
    }
  }

  isLoaded(name: string): boolean {
    const n = moduleName(name);
    return this.present.has(n) || this.index.builtin.has(n);
  }

  /**
   * Loads the named modules and their dependencies. Never throws for a module that fails to load: the failure
   * is reported and modules that depend on it are skipped (one broken driver must not stop the boot).
   * Unknown names are reported as failures too.
   */
  load(names: string[], params: Record<string, string> = {}): LoadReport {
    const report: LoadReport = { loaded: [], present: [], failed: [] };
    for (const wanted of names) {
      let order: ModuleEntry[];
      try {
        order = resolveLoadOrder(this.index, [wanted]);
      } catch (err) {
        report.failed.push({ name: moduleName(wanted), error: (err as Error).message });
        continue;
      }
      for (const m of order) {
        if (this.present.has(m.name)) {
          if (!report.present.includes(m.name) && !report.loaded.includes(m.name)) report.present.push(m.name);
          continue;
        }
        const brokenDep = [m.name, ...m.deps].find((d) => this.broken.has(d));
        if (brokenDep) {
          const error = brokenDep === m.name ? this.broken.get(m.name)! : `dependency ${brokenDep} failed to load`;
          if (!report.failed.some((f) => f.name === m.name)) report.failed.push({ name: m.name, error });
          continue;
        }
        const args = [this.params.get(m.name), params[m.name]].filter(Boolean).join(" ");
        try {
          this.sys.finitModule(`${this.dir}/${m.path}`, args);
          this.present.add(m.name);
          report.loaded.push(m.name);
        } catch (err) {
          if ((err as { code?: string }).code === "EEXIST") {
            this.present.add(m.name);
            report.present.push(m.name);
            continue;
          }
          const error = `finit_module ${m.path}: ${(err as Error).message}`;
          this.broken.set(m.name, error);
          report.failed.push({ name: m.name, error });
        }
      }
    }
    return report;
  }

  /** Drivers for the devices present now (no loading). */
  driversFor(modaliases: string[]): string[] {
    const out: string[] = [];
    for (const alias of modaliases) for (const m of matchAlias(this.index, alias)) if (!out.includes(m)) out.push(m);
    return out;
  }

  /**
   * Loads a driver for every device in /sys/bus that has one, repeating while newly loaded bus drivers reveal
   * new devices (at most `maxPasses` times).
   */
  coldplug(sysfs = "/sys", maxPasses = 5): LoadReport & { passes: number } {
    const total: LoadReport & { passes: number } = { loaded: [], present: [], failed: [], passes: 0 };
    const seen = new Set<string>();
    while (total.passes < maxPasses) {
      const fresh = readModaliases(this.fs, sysfs).filter((a) => !seen.has(a));
      if (!fresh.length) break;
      total.passes++;
      fresh.forEach((a) => seen.add(a));
      const wanted = this.driversFor(fresh).filter((m) => !this.isLoaded(m) && !this.broken.has(m));
      if (!wanted.length) continue;
      const r = this.load(wanted);
      total.loaded.push(...r.loaded);
      total.present.push(...r.present.filter((m) => !total.present.includes(m)));
      total.failed.push(...r.failed.filter((f) => !total.failed.some((t) => t.name === f.name)));
    }
    return total;
  }
}
