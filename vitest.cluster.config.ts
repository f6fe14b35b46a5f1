import { defineConfig } from "vitest/config";

// `npm run test:cluster`: whole nodes in sandboxes (test/sandbox, test/multinode): Kubernetes and etcd from their
// images in the loopback registry, several minutes each. One file at a time on a shared 2-core host; every wait
// carries its own bounded timeout and every sandbox and lab bridge is removed at the end.
export default defineConfig({
  test: {
    include: ["test/sandbox/**/*.test.ts", "test/multinode/**/*.test.ts"],
    testTimeout: 20 * 60_000,
    hookTimeout: 10 * 60_000,
    pool: "forks",
    maxWorkers: 1,
    fileParallelism: false,
    reporters: ["default"],
  },
});
