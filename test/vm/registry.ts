/**
 * A Debian `docker-registry` on loopback for the VM tests. The guest reaches the host as 10.0.2.2 (QEMU user
 * networking), so the port is fixed: the image's cmdline names `machined.insecure-registries=10.0.2.2:PORT`
 * (plain HTTP). Installer images are pushed with skopeo from build/<arch>/installer-<arch>.oci.tar.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { onCleanup } from "./vm.js";

export const REGISTRY_PORT = 45123;
export const GUEST_REGISTRY = `10.0.2.2:${REGISTRY_PORT}`;

export function missingRegistryTools(): string | undefined {
  for (const t of ["docker-registry", "skopeo"]) {
    try {
      execFileSync("sh", ["-c", `command -v ${t}`], { stdio: "ignore" });
    } catch {
      return `${t} is not installed (apt-get install ${t})`;
    }
  }
  return undefined;
}

export class Registry {
  private constructor(
    private readonly child: ChildProcess,
    readonly dir: string,
  ) {}

  static async start(): Promise<Registry> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "machined-vm-registry-"));
    fs.writeFileSync(
      path.join(dir, "config.yml"),
      `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: 127.0.0.1:${REGISTRY_PORT}\n`,
    );
    const child = spawn("docker-registry", ["serve", path.join(dir, "config.yml")], { stdio: ["ignore", "ignore", "pipe"], detached: true });
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    const r = new Registry(child, dir);
    r.off = onCleanup(() => r.stop());
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      if (child.exitCode !== null) throw new Error(`docker-registry exited: ${err.trim()}`);
      if (await connects(REGISTRY_PORT)) return r;
      await new Promise((res) => setTimeout(res, 200));
    }
    r.stop();
    throw new Error(`docker-registry did not listen on 127.0.0.1:${REGISTRY_PORT}: ${err.trim()}`);
  }

  /** Pushes an OCI archive; returns the reference as the guest sees it. */
  push(archive: string, repoTag: string): string {
    execFileSync("skopeo", ["copy", "--quiet", "--dest-tls-verify=false", `oci-archive:${archive}`, `docker://127.0.0.1:${REGISTRY_PORT}/${repoTag}`], { timeout: 300_000 });
    return `${GUEST_REGISTRY}/${repoTag}`;
  }

  private off: () => void = () => {};

  stop(): void {
    this.off();
    try {
      if (this.child.pid) process.kill(-this.child.pid, "SIGKILL");
    } catch {
      // gone
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.on("connect", () => (s.destroy(), resolve(true)));
    s.on("error", () => resolve(false));
  });
}
