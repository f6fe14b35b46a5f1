/**
 * secrets.RootOSController: the Talos API root (OSRootSecrets `os`) from the machine config — the OS CA (its key
 * only on control planes: a worker's config carries the certificate alone), the accepted CAs, machine.certSANs
 * split into IPs and names, and machine.token. Every API certificate the node presents derives from it.
 */
import { parseIP } from "../../machinery/config/net.js";
import { fromBase64Pem } from "../../machinery/pki/pem.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { OSRootType, SECRET_IDS, SECRETS_NS, type OSRootSpec } from "../../machinery/resources/types/secrets.js";
import { pointer } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";

export function rootOSController(): Controller {
  const ptr = pointer(OSRootType, SECRET_IDS.os);
  return {
    name: "secrets.RootOSController",
    inputs: [machineConfigInput],
    outputs: [{ type: OSRootType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      const ca = cfg?.machine?.ca;
      if (!cfg?.machine || !cfg.cluster || !ca?.crt) {
        ctx.destroy(ptr);
        return;
      }
      const crt = pem(ca.crt, "machine.ca.crt");
      const sans = (cfg.machine.certSANs ?? []) as string[];
      const spec: OSRootSpec = {
        issuingCA: ca.key ? { crt, key: pem(ca.key, "machine.ca.key") } : undefined,
        acceptedCAs: [
          ...((cfg.machine.acceptedCAs ?? []) as { crt: string }[]).map((a, i) => ({ crt: pem(a.crt, `machine.acceptedCAs[${i}].crt`) })),
          { crt },
        ],
        certSANIPs: sans.filter((s) => parseIP(s) !== undefined),
        certSANDNSNames: sans.filter((s) => parseIP(s) === undefined),
        token: cfg.machine.token ?? "",
      };
      ctx.apply({ ...ptr, namespace: SECRETS_NS, spec });
    },
  };
}

/** A base64-of-PEM config field as PEM text; the error names the field. */
export function pem(b64: string, field: string): string {
  try {
    return fromBase64Pem(b64);
  } catch (err) {
    throw new Error(`${field}: ${(err as Error).message}`);
  }
}
