/**
 * Real daemons for the registry test: Debian's docker-registry on 127.0.0.1:<free port> and a private containerd
 * (own root, state and socket under the test folder). Both are stopped by the pid we started, never by name.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { Ctr, containerdConfig, containerdPaths } from "../../../src/supervisor/index.js";
import { payloadFiles, ARCH, type FakeInstaller } from "./fixtures.js";

const run = promisify(execFile);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

async function until(what: string, fn: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up within ${ms} ms`);
}

export interface Daemon {
  child: ChildProcess;
  stop(): Promise<void>;
}

function daemon(args: string[]): Daemon {
  const child = spawn(args[0], args.slice(1), { stdio: ["ignore", "ignore", "ignore"] });
  return {
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}

export async function startRegistry(dir: string): Promise<Daemon & { host: string }> {
  const port = await freePort();
  const cfg = join(dir, "registry.yml");
  await mkdir(join(dir, "registry-data"), { recursive: true });
  await writeFile(cfg, `version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "registry-data")}\nhttp:\n  addr: 127.0.0.1:${port}\nlog:\n  level: error\n`);
  const d = daemon(["docker-registry", "serve", cfg]);
  const host = `127.0.0.1:${port}`;
  await until("docker-registry", async () => (await fetch(`http://${host}/v2/`)).ok);
  return { ...d, host };
}

export async function startContainerd(dir: string): Promise<Daemon & { ctr: Ctr }> {
  const paths = containerdPaths(join(dir, "ctrd"));
  for (const p of [paths.root, paths.state, join(paths.socket, "..")]) await mkdir(p, { recursive: true });
  await writeFile(paths.config, containerdConfig(paths, { cri: false }));
  const d = daemon(["containerd", "--config", paths.config]);
  const ctr = new Ctr(paths.socket);
  await until("containerd", async () => (await ctr.version()) !== "");
  return { ...d, ctr };
}

/** An installer image built the way image/mkinstaller.sh builds one (umoci), pushed with skopeo. */
export async function pushInstaller(dir: string, registry: string, tag: string, f: FakeInstaller): Promise<string> {
  const tree = join(dir, `tree-${tag}`);
  await mkdir(tree, { recursive: true });
  for (const file of payloadFiles(f)) await writeFile(join(tree, file.name.split("/").pop()!), file.data);
  const layout = join(dir, "umoci");
  await run("umoci", ["init", "--layout", layout]).catch(() => undefined); // exists after the first tag
  await run("umoci", ["new", "--image", `${layout}:${tag}`]);
  await run("umoci", ["insert", "--image", `${layout}:${tag}`, tree, `/usr/install/${ARCH}`]);
  await run("umoci", ["config", "--image", `${layout}:${tag}`, "--os", "linux", "--architecture", ARCH]);
  const ref = `${registry}/machined/installer:${tag}`;
  await run("skopeo", ["--insecure-policy", "copy", "--dest-tls-verify=false", `oci:${layout}:${tag}`, `docker://${ref}`]);
  return ref;
}
