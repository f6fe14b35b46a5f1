/**
 * runtime.SecurityStateController: SecurityState (`runtime`/`securitystate`). Secure Boot is reported
 * false: this agent's boot chain is not a signed UKI (and in local mode Talos did not boot the host at
 * all). SELinux, FIPS and module signature enforcement are read from the running kernel.
 */
import { hostFiles, type Files } from "../../host/files/index.js";
import * as path from "node:path";
import { SecurityStateType, type FIPSStateName, type SecurityStateSpec, type SELinuxStateName } from "../../machinery/resources/types/security.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export interface SecurityStateOptions {
  /** Filesystem root holding `sys/` and `proc/`; default "/". */
  root?: string;
  files?: Files;
}

async function read(files: Files, root: string, rel: string): Promise<string | undefined> {
  return files.readFile(path.join(root, rel), "utf8").then(
    (t) => t.trim(),
    () => undefined,
  );
}

export async function readSecurityState(root = "/", files: Files = hostFiles): Promise<SecurityStateSpec> {
  const enforce = await read(files, root, "sys/fs/selinux/enforce");
  const selinuxState: SELinuxStateName = enforce === undefined ? "disabled" : enforce === "1" ? "enabled, enforcing" : "enabled, permissive";
  const fipsState: FIPSStateName = (await read(files, root, "proc/sys/crypto/fips_enabled")) === "1" ? "enabled" : "disabled";
  const sigEnforce = await read(files, root, "sys/module/module/parameters/sig_enforce");
  return {
    secureBoot: false,
    ukiSigningKeyFingerprint: "",
    pcrSigningKeyFingerprint: "",
    selinuxState,
    fipsState,
    bootedWithUKI: false,
    moduleSignatureEnforced: sigEnforce === "Y",
  };
}

export function securityStateController(opts: SecurityStateOptions = {}): Controller {
  return {
    name: "runtime.SecurityStateController",
    inputs: [],
    outputs: [{ type: SecurityStateType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      ctx.apply({ namespace: RUNTIME_NS, type: SecurityStateType.type, id: "securitystate", spec: await readSecurityState(opts.root, opts.files) });
    },
  };
}
