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

module.exports = {
  forbidden: [
    ...forbidden,
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
