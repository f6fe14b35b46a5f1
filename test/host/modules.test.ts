import { describe, expect, it } from "vitest";
import {
  ModuleLoader,
  cmdlineModuleParams,
  globToRegExp,
  matchAlias,
  moduleName,
  parseModulesAlias,
  parseModulesBuiltin,
  parseModulesDep,
  parseModulesSoftdep,
  readModaliases,
  resolveLoadOrder,
  type ModuleFs,
  type ModuleIndex,
} from "../../src/host/modules.js";
import { FakeSyscalls, SyscallError } from "../../src/host/syscalls.js";

const DIR = "/usr/lib/modules/6.1.0-57-amd64";

// Shaped like the real depmod output of Debian 6.1 (virtio stack, xfs with its crc32c softdep).
const MODULES_DEP = `kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/net/core/failover.ko:
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/lib/libcrc32c.ko:
kernel/crypto/crc32c_generic.ko:
kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko
kernel/drivers/watchdog/i6300esb.ko:
kernel/drivers/hwmon/some-thing.ko:
`;

const MODULES_ALIAS = `# Aliases extracted from modules themselves.
alias pci:v00001AF4d*sv*sd*bc*sc*i* virtio_pci
alias virtio:d00000001v* virtio_net
alias virtio:d00000002v* virtio_blk
alias pci:v00008086d000025ABsv*sd*bc*sc*i* i6300esb
alias fs-xfs xfs
alias crypto-crc32c crc32c_generic
alias crc32c crc32c_generic
alias acpi*:PNP0C0[9A]:* some_thing
alias of:N*T*Cfoo,bar[!0-9]* some_thing
`;

const MODULES_SOFTDEP = `# Soft dependencies extracted from modules themselves.
softdep libcrc32c pre: crc32c
softdep crc32c pre: crc32c_generic
softdep virtio_net post: not_shipped_here
`;

const MODULES_BUILTIN = `kernel/drivers/block/loop.ko
kernel/fs/squashfs/squashfs.ko
`;

function memFs(files: Record<string, string>): ModuleFs {
  return {
    readFile: (p) => files[p] ?? null,
    readdir: (p) => {
      const prefix = p.endsWith("/") ? p : `${p}/`;
      const names = new Set<string>();
      for (const f of Object.keys(files)) if (f.startsWith(prefix)) names.add(f.slice(prefix.length).split("/")[0]);
      return [...names];
    },
  };
}

const depmodFiles = {
  [`${DIR}/modules.dep`]: MODULES_DEP,
  [`${DIR}/modules.alias`]: MODULES_ALIAS,
  [`${DIR}/modules.softdep`]: MODULES_SOFTDEP,
  [`${DIR}/modules.builtin`]: MODULES_BUILTIN,
};

function index(): ModuleIndex {
  return {
    modules: parseModulesDep(MODULES_DEP),
    aliases: parseModulesAlias(MODULES_ALIAS),
    softdeps: parseModulesSoftdep(MODULES_SOFTDEP),
    builtin: parseModulesBuiltin(MODULES_BUILTIN),
  };
}

describe("depmod file parsing", () => {
  it("reads modules.dep into names, paths and dependency names", () => {
    const deps = parseModulesDep(MODULES_DEP);
    expect(deps.size).toBe(14);
    expect(deps.get("virtio_pci")).toEqual({
      name: "virtio_pci",
      path: "kernel/drivers/virtio/virtio_pci.ko",
      deps: ["virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio", "virtio_ring"],
    });
    expect(deps.get("virtio_ring")?.deps).toEqual([]);
    // '-' and '_' are the same in module names
    expect(deps.get("some_thing")?.path).toBe("kernel/drivers/hwmon/some-thing.ko");
  });

  it("normalises module names from paths and compressed files", () => {
    expect(moduleName("kernel/fs/nls/nls_cp437.ko")).toBe("nls_cp437");
    expect(moduleName("kernel/drivers/hid/hid-generic.ko.xz")).toBe("hid_generic");
    expect(moduleName("snd-hda-intel")).toBe("snd_hda_intel");
  });

  it("reads aliases, softdeps and builtins", () => {
    const aliases = parseModulesAlias(MODULES_ALIAS);
    expect(aliases).toHaveLength(9);
    expect(aliases[0]).toEqual({
      pattern: "pci:v00001AF4d*sv*sd*bc*sc*i*",
      module: "virtio_pci",
      prefix: "pci:v00001AF4d",
      literal: "pci:v00001AF4d",
    });
    expect(aliases.find((a) => a.pattern.startsWith("of:"))?.literal).toBe("Cfoo,bar");
    expect(aliases.find((a) => a.pattern.startsWith("acpi"))?.literal).toBe(":PNP0C0");
    const soft = parseModulesSoftdep(MODULES_SOFTDEP);
    expect(soft.get("libcrc32c")).toEqual({ pre: ["crc32c"], post: [] });
    expect(soft.get("virtio_net")).toEqual({ pre: [], post: ["not_shipped_here"] });
    expect([...parseModulesBuiltin(MODULES_BUILTIN)]).toEqual(["loop", "squashfs"]);
  });

  it("takes <module>.<param>= words from the kernel cmdline", () => {
    const p = cmdlineModuleParams("console=ttyS0 virtio-net.napi_tx=1 panic=10 virtio_net.foo=bar xfs.x=\"a\"");
    expect(p.get("virtio_net")).toBe("napi_tx=1 foo=bar");
    expect(p.get("xfs")).toBe('x="a"');
    expect(p.has("console")).toBe(false);
  });
});

describe("load order", () => {
  it("loads every dependency before its user, deepest first, each module once", () => {
    const order = resolveLoadOrder(index(), ["virtio_pci", "virtio_net", "virtio_blk"]).map((m) => m.name);
    expect(order).toEqual([
      "virtio_ring",
      "virtio",
      "virtio_pci_modern_dev",
      "virtio_pci_legacy_dev",
      "virtio_pci",
      "failover",
      "net_failover",
      "virtio_net",
      "virtio_blk",
    ]);
  });

  it("puts softdep pre: modules first and tolerates softdeps this kernel lacks", () => {
    // xfs -> libcrc32c -> (softdep) crc32c, an alias of crc32c_generic here (as in Debian's modules.alias)
    expect(resolveLoadOrder(index(), ["xfs"]).map((m) => m.name)).toEqual(["crc32c_generic", "libcrc32c", "xfs"]);
    const idx = index();
    idx.aliases = idx.aliases.filter((a) => a.pattern !== "crc32c");
    expect(resolveLoadOrder(idx, ["xfs"]).map((m) => m.name)).toEqual(["libcrc32c", "xfs"]);
    // post: modules come after the module itself; missing ones are skipped
    expect(resolveLoadOrder(index(), ["virtio_blk"]).map((m) => m.name)).toEqual(["virtio_ring", "virtio", "virtio_blk"]);
    idx.softdeps.set("virtio_blk", { pre: [], post: ["xfs"] });
    expect(resolveLoadOrder(idx, ["virtio_blk"]).map((m) => m.name)).toEqual(["virtio_ring", "virtio", "virtio_blk", "libcrc32c", "xfs"]);
  });

  it("skips builtin modules and rejects unknown ones with their name", () => {
    expect(resolveLoadOrder(index(), ["loop", "squashfs"])).toEqual([]);
    expect(() => resolveLoadOrder(index(), ["nope"])).toThrow("module nope is not in modules.dep");
    const idx = index();
    idx.modules.set("broken", { name: "broken", path: "kernel/broken.ko", deps: ["ghost"] });
    expect(() => resolveLoadOrder(idx, ["broken"])).toThrow("module ghost (needed by broken)");
  });
});

describe("alias matching", () => {
  it("matches fnmatch wildcards: *, ? and [classes]", () => {
    expect(globToRegExp("a*b?c").test("axxxbyc")).toBe(true);
    expect(globToRegExp("a*b?c").test("abc")).toBe(false);
    expect(globToRegExp("x[0-9]y").test("x5y")).toBe(true);
    expect(globToRegExp("x[!0-9]y").test("x5y")).toBe(false);
    expect(globToRegExp("x[!0-9]y").test("xay")).toBe(true);
    expect(globToRegExp("a.b(c)").test("a.b(c)")).toBe(true);
    expect(globToRegExp("a.b").test("axb")).toBe(false);
    expect(globToRegExp("[ab").test("[ab")).toBe(true);
  });

  it("finds drivers for real modalias strings", () => {
    const idx = index();
    expect(matchAlias(idx, "pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00")).toEqual(["virtio_pci"]);
    expect(matchAlias(idx, "virtio:d00000001v00001AF4")).toEqual(["virtio_net"]);
    expect(matchAlias(idx, "pci:v00008086d000025ABsv00001AF4sd00001100bc08sc80i00")).toEqual(["i6300esb"]);
    expect(matchAlias(idx, "acpi:PNP0C0A:")).toEqual(["some_thing"]);
    expect(matchAlias(idx, "acpi:PNP0C0B:")).toEqual([]);
    expect(matchAlias(idx, "of:NfooTbarCfoo,barX")).toEqual(["some_thing"]);
    expect(matchAlias(idx, "of:NfooTbarCfoo,bar7")).toEqual([]);
    expect(matchAlias(idx, "pci:v000010ECd00008168sv0sd0bc02sc00i00")).toEqual([]);
  });
});

describe("ModuleLoader", () => {
  it("loads modules through finit_module with full paths, honouring /proc/modules and cmdline params", () => {
    const sys = new FakeSyscalls();
    const loader = new ModuleLoader({
      sys,
      dir: DIR,
      fs: memFs({ ...depmodFiles, "/proc/modules": "virtio_ring 45056 2 virtio, Live 0x0\n" }),
      cmdline: "console=ttyS0 virtio_net.napi_tx=1",
    });
    const r = loader.load(["virtio_net"], { virtio_net: "speed=100" });
    expect(r.loaded).toEqual(["virtio", "failover", "net_failover", "virtio_net"]);
    expect(r.present).toEqual(["virtio_ring"]);
    expect(sys.callsOf("finitModule")).toEqual([
      [`${DIR}/kernel/drivers/virtio/virtio.ko`, ""],
      [`${DIR}/kernel/net/core/failover.ko`, ""],
      [`${DIR}/kernel/drivers/net/net_failover.ko`, ""],
      [`${DIR}/kernel/drivers/net/virtio_net.ko`, "napi_tx=1 speed=100"],
    ]);
    // second call: nothing left to do
    expect(loader.load(["virtio_net"]).loaded).toEqual([]);
    expect(sys.callsOf("finitModule")).toHaveLength(4);
  });

  it("treats EEXIST as loaded and skips the dependants of a module that failed", () => {
    const calls: string[] = [];
    const sys = {
      finitModule(path: string) {
        calls.push(moduleName(path));
        if (path.endsWith("/virtio_ring.ko")) throw new SyscallError("finit_module", 17); // EEXIST
        if (path.endsWith("/failover.ko") && !path.endsWith("net_failover.ko")) throw new SyscallError("finit_module", 8); // ENOEXEC
      },
    };
    const loader = new ModuleLoader({ sys, dir: DIR, fs: memFs(depmodFiles), cmdline: "" });
    const r = loader.load(["virtio_net", "virtio_blk", "nope"]);
    expect(calls).toEqual(["virtio_ring", "virtio", "failover", "virtio_blk"]);
    expect(r.loaded).toEqual(["virtio", "virtio_blk"]);
    expect(r.present).toEqual(["virtio_ring"]);
    expect(r.failed.map((f) => f.name)).toEqual(["failover", "net_failover", "virtio_net", "nope"]);
    expect(r.failed[0].error).toContain("ENOEXEC");
    expect(r.failed[1].error).toBe("dependency failover failed to load");
    expect(r.failed[3].error).toContain("not in modules.dep");
  });

  it("coldplugs from /sys/bus modaliases, repeating while bus drivers reveal new devices", () => {
    const files: Record<string, string> = {
      ...depmodFiles,
      "/sys/bus/pci/devices/0000:00:02.0/modalias": "pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00\n",
      "/sys/bus/pci/devices/0000:00:03.0/modalias": "pci:v00008086d000025ABsv00001AF4sd00001100bc08sc80i00\n",
      "/sys/bus/pci/devices/0000:00:04.0/modalias": "pci:v000010ECd00008168sv0sd0bc02sc00i00\n",
      "/sys/bus/platform/devices/serial8250/uevent": "DRIVER=serial8250\n",
    };
    const fs = memFs(files);
    const sys = {
      finitModule(path: string) {
        // like the kernel: once virtio_pci binds, the virtio bus gets a device for the NIC
        if (path.endsWith("/virtio_pci.ko")) files["/sys/bus/virtio/devices/virtio0/modalias"] = "virtio:d00000001v00001AF4";
      },
    };
    expect(readModaliases(fs)).toHaveLength(3);
    const loader = new ModuleLoader({ sys, dir: DIR, fs, cmdline: "" });
    const r = loader.coldplug();
    expect(r.passes).toBe(2);
    expect(r.failed).toEqual([]);
    expect(r.loaded).toEqual([
      "virtio_ring",
      "virtio",
      "virtio_pci_modern_dev",
      "virtio_pci_legacy_dev",
      "virtio_pci",
      "i6300esb",
      "failover",
      "net_failover",
      "virtio_net",
    ]);
    expect(loader.coldplug().loaded).toEqual([]); // nothing new
  });

  it("names the folder when the kernel has no modules.dep", () => {
    expect(() => new ModuleLoader({ sys: new FakeSyscalls(), dir: "/nowhere", fs: memFs({}), cmdline: "" })).toThrow(
      "/nowhere/modules.dep not found",
    );
  });
});
