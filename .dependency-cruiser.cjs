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
};

const forbidden = Object.entries(layers).map(([layer, allowed]) => {
  const others = Object.keys(layers)
    .filter((l) => l !== layer && !allowed.includes(l))
    .concat(["pid1", "cli"]);
  return {
    name: `${layer}-imports-only-below`,
    comment: `src/${layer} may import only: ${allowed.join(", ") || "nothing outside itself"}`,
    severity: "error",
    from: { path: `^src/${layer}/` },
    to: { path: `^src/(${others.join("|")})/` },
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
