/**
 * Documents every machine type gets besides v1alpha1 (Talos 1.12+ layouts): discovery service and identity,
 * unattended install, host DNS, EPHEMERAL hardening, filesystem trim, workload isolation, hostname and KubeSpan.
 */
import { DEFAULT_DISCOVERY_ENDPOINT, DEFAULT_FILESYSTEM_TRIM_INTERVAL } from "./constants.js";
import { compact, type GenInput } from "./input.js";

export type Doc = Record<string, unknown>;

const doc = (kind: string, body: Doc): Doc => ({ apiVersion: "v1alpha1", kind, ...body });

export function commonDocuments(inp: GenInput): Doc[] {
  const c = inp.contract;
  const out: Doc[] = [];
  if (inp.discovery && c.discoveryServiceMultidoc) {
    out.push(doc("DiscoveryServiceConfig", { name: "default", endpoint: DEFAULT_DISCOVERY_ENDPOINT }));
  }
  if (c.discoveryIdentityMultidoc) {
    out.push(
      doc("DiscoveryIdentityConfig", {
        clusterID: inp.secrets.cluster.id,
        clusterSecret: inp.secrets.cluster.secret,
      }),
    );
  }
  // the install disk becomes a CEL disk selector, so without a disk there is no document (as upstream)
  if (c.unattendedInstall && inp.installDisk) {
    out.push(
      doc("UnattendedInstallConfig", {
        installer: compact([["image", inp.installImage || undefined]]),
        provisioning: { diskSelector: { match: `disk.dev_path == ${JSON.stringify(inp.installDisk)}` }, wipe: false },
      }),
    );
  }
  if (c.hostDNS && c.hostDNSMultidoc) {
    out.push(
      doc("ResolverConfig", {
        hostDNS: compact([["enabled", true], ["forwardKubeDNSToHost", c.hostDNSForwardKubeDNSToHost ? true : undefined]]),
      }),
    );
  }
  if (c.filesystemTrimByDefault) {
    out.push(doc("VolumeConfig", { name: "EPHEMERAL", mount: { secure: true } }));
    out.push(doc("FilesystemTrimConfig", { interval: DEFAULT_FILESYSTEM_TRIM_INTERVAL }));
  }
  if (c.workloadIsolationByDefault) out.push(doc("SecurityProfileConfig", { workloadIsolation: true }));
  if (c.multidocNetwork) out.push(doc("HostnameConfig", { auto: "stable" }));
  if (inp.kubeSpan !== undefined && c.kubeSpanMultidoc) out.push(doc("KubeSpanConfig", { enabled: inp.kubeSpan }));
  return out;
}

export { doc };
