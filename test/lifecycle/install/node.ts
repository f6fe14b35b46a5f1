/**
 * A real local-mode node (TLS + gRPC on loopback) whose install disk is a 4 GiB sparse image file, with fake
 * installer images in an OCI layout, so install, upgrade, rollback, fallback and reset run end to end without a
 * VM, a spare disk or a registry. Host disks are kept out of discovery (empty sysfs root).
 */
import "./env.js";
import "reflect-metadata";
import { mkdir, mkdtemp, open, rm, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runLocalNode, type RunningNode } from "../../../src/pid1/local.js";
import type { InstallManager } from "../../../src/lifecycle/install/manager.js";
import type { InstallManagerOptions } from "../../../src/lifecycle/install/manager.js";

export const GiB = 2 ** 30;

export async function sparse(path: string, size: number): Promise<string> {
  const fh = await open(path, "w");
  await fh.close();
  await truncate(path, size);
  return path;
}

export interface InstallRig {
  dir: string;
  stateDir: string;
  disk: string;
  dataDisk: string;
  layout: string;
  node: RunningNode;
  address: string;
  install: InstallManager;
  stop(): Promise<void>;
}

export async function startInstallRig(o: Partial<Omit<InstallManagerOptions, "node" | "stateDir">> & { services?: boolean } = {}): Promise<InstallRig> {
  const dir = await mkdtemp(join(tmpdir(), "machined-install-"));
  const stateDir = join(dir, "state");
  const sys = join(dir, "empty-sys");
  await mkdir(sys);
  const disk = await sparse(join(dir, "disk.img"), 4 * GiB);
  const dataDisk = await sparse(join(dir, "data.img"), 64 * 2 ** 20);
  const { services, ...install } = o;
  const node = await runLocalNode(
    {
      stateDir,
      listen: { host: "127.0.0.1", port: 0 },
      logLevel: process.env.MACHINED_TEST_LOG ?? "silent",
      services: services ?? false,
      install: { imageFiles: [disk, dataDisk], sysRoot: sys, devRoot: sys, readyTimeoutMs: 1500, bootTries: 2, ...install },
    },
    false,
  );
  return {
    dir,
    stateDir,
    disk,
    dataDisk,
    layout: join(dir, "images"),
    node,
    address: `127.0.0.1:${node.port}`,
    install: node.install,
    async stop() {
      await node.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
