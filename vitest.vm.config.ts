import { defineConfig } from "vitest/config";

// `npm run test:vm`: boots the OS image under QEMU (test/vm). One file at a time (one QEMU at a time on a shared
// 2-core host); every step carries its own bounded timeout and every QEMU is killed at the end.
export default defineConfig({
  test: {
    include: ["test/vm/**/*.test.ts"],
    testTimeout: 20 * 60_000,
    hookTimeout: 30 * 60_000,
    pool: "forks",
    maxWorkers: 1,
    fileParallelism: false,
    reporters: ["default"],
  },
});
