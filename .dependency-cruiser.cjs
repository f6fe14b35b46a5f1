/**
 * Import direction between layers (docs/architecture.md). A layer may import only the layers listed
 * for it; `npm run lint:deps` fails on any other edge.
 */
const layers = {
  machinery: [],
  host: ["machinery"],
  state: ["machinery"],
  supervisor: ["machinery", "host", "state"],
  boot: ["machinery", "host"],
  controllers: ["machinery", "host", "state", "supervisor", "boot"],
  lifecycle: ["machinery", "host", "state", "supervisor", "boot", "controllers"],
  api: ["machinery", "host", "state", "supervisor", "boot", "controllers", "lifecycle"],
  // The entry wirings (local mode and PID 1), then the command line, then the process entry src/main.ts.
  pid1: ["machinery", "host", "state", "supervisor", "boot", "controllers", "lifecycle", "api"],
  cli: ["machinery", "host", "state", "supervisor", "boot", "controllers", "lifecycle", "api", "pid1"],
};

const forbidden = Object.entries(layers).map(([layer, allowed]) => {
  const others = Object.keys(layers)
    .filter((l) => l !== layer && !allowed.includes(l));
  return {
    name: `${layer}-imports-only-below`,
    comment: `src/${layer} may import only: ${allowed.join(", ") || "nothing outside itself"}`,
    severity: "error",
    from: { path: `^src/${layer}/` },
    to: { path: `^src/(${[...others, "main"].join("|")})(/|\\.ts$)` },
  };
});

/**
 * The OS only behind src/host: Node's OS-touching builtins (with or without the `node:` prefix) and the
 * libraries that spawn processes or call native code. Entry wiring (src/pid1, src/cli, src/main.ts) may use
 * them directly; everything else goes through a host capability (Files, Tools, BlockIO, ...).
 */
const OS_BUILTINS = ["fs", "fs/promises", "os", "net", "child_process", "dgram", "dns", "dns/promises"];
const OS_LIBRARIES = ["execa", "koffi"];
const ENTRY_WIRING = ["^src/pid1/", "^src/cli/", "^src/main\\.ts$"];
/** Temporary: files being rewritten elsewhere right now. Removed by the lead's rewrite. */
const PENDING_REWRITE = [
  "^src/supervisor/services/etcd\\.ts$", // the etcd-join branch moves its files behind src/host
];

const osOnlyBehindHost = {
  name: "os-only-behind-host",
  comment: `only src/host (and the entry wiring) may import ${[...OS_BUILTINS, ...OS_LIBRARIES].join(", ")}; use a host capability`,
  severity: "error",
  from: { path: "^src/", pathNot: ["^src/host/", ...ENTRY_WIRING, ...PENDING_REWRITE] },
  to: { path: [`^(node:)?(${OS_BUILTINS.join("|")})$`, `(^|/)node_modules/(${OS_LIBRARIES.join("|")})/`] },
};

module.exports = {
  forbidden: [
    ...forbidden,
    osOnlyBehindHost,
    {
      name: "no-circular",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/machinery/api/gen/" },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
