/**
 * secrets.RootOSController: OSRootSecret `os` from the machine config (upstream's derivation): the OS CA as the
 * issuing CA (dropped when the config holds only its certificate, as a worker's does), the accepted CAs with the
 * issuing CA's certificate appended, `machine.certSANs` split into IPs and DNS names (plus the Talos API service
 * names when Kubernetes access to the Talos API is on), and the machine token.
 */
import { isIP } from "node:net";
import { OSRootType, SECRETS_NS, type OSRootSpec } from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { activeConfig, activeConfigInput } from "../config/active.js";

export const OS_ROOT_ID = "os";

export function osRootController(): Controller {
  const ptr = { namespace: SECRETS_NS, type: OSRootType.type, id: OS_ROOT_ID };
  return {
    name: "secrets.RootOSController",
    inputs: [activeConfigInput],
    outputs: [{ type: OSRootType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = activeConfig(ctx);
      const machine = cfg?.v1alpha1()?.machine;
      if (!machine || !cfg?.cluster) {
        ctx.destroy(ptr);
        return;
      }
      const ca = machine.ca;
      const accepted = (machine.acceptedCAs ?? []).filter((c) => c.crt).map((c) => ({ crt: c.crt! }));
      if (ca?.crt) accepted.push({ crt: ca.crt });
      const sans = machine.certSANs ?? [];
      const dns = sans.filter((s) => isIP(s) === 0);
      if (machine.features?.kubernetesTalosAPIAccess?.enabled) dns.push("talos", "talos.default");
      const spec: OSRootSpec = {
        issuingCA: ca?.crt && ca.key ? { crt: ca.crt, key: ca.key } : null,
        acceptedCAs: accepted,
        certSANIPs: sans.filter((s) => isIP(s) !== 0),
        certSANDNSNames: dns,
        token: machine.token ?? "",
      };
      ctx.apply({ ...ptr, spec });
    },
  };
}
