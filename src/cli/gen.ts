/** `machined gen config` and `machined gen secrets`: the same files `talosctl gen config/secrets` writes. */
import { hostFiles as fs } from "../host/files/index.js";
import * as path from "node:path";
import type { Command } from "./args.js";
import { UsageError } from "./args.js";
import { generateConfigs } from "../machinery/generate/index.js";
import { generateSecrets, loadSecrets, secretsToYaml } from "../machinery/pki/secrets.js";

async function writeNew(file: string, data: string, force: boolean, mode = 0o600): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  try {
    await fs.writeFile(file, data, { mode, flag: force ? "w" : "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new Error(`${file} already exists, use --force to overwrite`);
    throw err;
  }
}

export const genConfigCommand: Command = {
  name: "gen config",
  summary: "generate controlplane.yaml, worker.yaml and talosconfig for a new cluster",
  usage: "machined gen config NAME ENDPOINT [--output-dir DIR] [--install-disk PATH] [--additional-sans SAN ...] [--with-secrets FILE]",
  options: {
    "output-dir": { type: "string", short: "o", default: "." },
    "install-disk": { type: "string", default: "/dev/sda" },
    "install-image": { type: "string" },
    "additional-sans": { type: "string", multiple: true },
    "with-secrets": { type: "string" },
    "kubernetes-version": { type: "string" },
    // The classic single-document layout (1.13) is what every talosctl in use reads and writes;
    // v1.14 selects the new multi-document layout.
    "talos-version": { type: "string", default: "v1.13" },
    force: { type: "boolean", default: false },
  },
  positionals: 2,
  async run(values, [name, endpoint]) {
    if (!/^https?:\/\/[^/]+/.test(endpoint)) {
      throw new UsageError(`gen config: ENDPOINT must be a URL like https://10.0.0.1:6443, got "${endpoint}"`);
    }
    const secretsFile = values["with-secrets"] as string | undefined;
    const secrets = secretsFile ? loadSecrets(await fs.readFile(secretsFile, "utf8")) : await generateSecrets();
    const out = await generateConfigs({
      clusterName: name,
      endpoint,
      installDisk: values["install-disk"] as string,
      installImage: values["install-image"] as string | undefined,
      additionalSans: (values["additional-sans"] as string[] | undefined)?.flatMap((s) => s.split(",")).filter(Boolean),
      kubernetesVersion: values["kubernetes-version"] as string | undefined,
      talosVersion: values["talos-version"] as string,
      secrets,
    });
    const dir = String(values["output-dir"]);
    const force = Boolean(values.force);
    await writeNew(path.join(dir, "controlplane.yaml"), out.controlplane, force);
    await writeNew(path.join(dir, "worker.yaml"), out.worker, force);
    await writeNew(path.join(dir, "talosconfig"), out.talosconfig, force);
    console.error(`generating PKI and tokens\nCreated ${dir}/controlplane.yaml\nCreated ${dir}/worker.yaml\nCreated ${dir}/talosconfig`);
  },
};

export const genSecretsCommand: Command = {
  name: "gen secrets",
  summary: "generate a secrets bundle (CAs, keys, tokens) to reuse with gen config --with-secrets",
  usage: "machined gen secrets [-o FILE] [--force]",
  options: {
    "output-file": { type: "string", short: "o", default: "secrets.yaml" },
    force: { type: "boolean", default: false },
  },
  positionals: 0,
  async run(values) {
    const file = String(values["output-file"]);
    await writeNew(file, secretsToYaml(await generateSecrets()), Boolean(values.force));
    console.error(`Created ${file}`);
  },
};
