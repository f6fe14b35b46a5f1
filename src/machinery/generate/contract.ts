/**
 * Version contract: which config layout to generate for a target Talos version (`--talos-version`). Each flag is the
 * first release that changed `gen config` output; "current" (no version given) has every flag this release knows.
 * In Talos 1.14 most v1alpha1 sections moved to separate documents (KubeletConfig, KubeClusterConfig, ...).
 */
export class VersionContract {
  private constructor(
    readonly major: number,
    readonly minor: number,
  ) {}

  static readonly current = new VersionContract(Infinity, Infinity);

  /** Parses "v1.13", "1.13.2", "v1.14.0-beta.1"; undefined or "" means current. */
  static parse(version: string | undefined): VersionContract {
    if (!version) return VersionContract.current;
    const m = /^v?(\d+)\.(\d+)($|\.|-)/.exec(version);
    if (!m) throw new Error(`error parsing version ${JSON.stringify(version)}: expected something like v1.14`);
    return new VersionContract(Number(m[1]), Number(m[2]));
  }

  toString(): string {
    return this.major === Infinity ? "current" : `v${this.major}.${this.minor}`;
  }

  /** Strictly newer than `major.minor` (current is newer than every release). */
  after(major: number, minor: number): boolean {
    return this.major > major || (this.major === major && this.minor > minor);
  }

  get podSecurityAdmission() { return this.after(1, 0); }
  get stableHostname() { return this.after(1, 1); }
  get kubeletSeccompDefault() { return this.after(1, 1); }
  get allowSchedulingOnControlPlanesField() { return this.after(1, 1); }
  get kubernetesDiscoveryBackendDisabled() { return this.after(1, 1); }
  get alternateImageRegistries() { return this.after(1, 1) && !this.after(1, 2); }
  get apidExtKeyUsageCheck() { return this.after(1, 2); }
  get auditPolicy() { return this.after(1, 2); }
  get kubeletManifestsDirectoryDisabled() { return this.after(1, 2); }
  get secretboxEncryption() { return this.after(1, 2); }
  get diskQuotaSupport() { return this.after(1, 4); }
  get kubePrism() { return this.after(1, 5); }
  get hostDNS() { return this.after(1, 6); }
  get rsaServiceAccountKey() { return this.after(1, 6); }
  get clusterNameForWorkers() { return this.after(1, 7); }
  get hostDNSForwardKubeDNSToHost() { return this.after(1, 7); }
  get excludeFromExternalLB() { return this.after(1, 7); }
  get multidocNetwork() { return this.after(1, 11); }
  get hideDisablePSP() { return this.after(1, 11); }
  get hideRBACAndKeyUsage() { return this.after(1, 11); }
  get populateClusterSANsFromEndpoint() { return !this.after(1, 11); }
  get grubUseUKICmdline() { return this.after(1, 11); }
  get kubeSpanMultidoc() { return this.after(1, 12); }
  get hostDNSMultidoc() { return this.after(1, 13); }
  get discoveryServiceMultidoc() { return this.after(1, 13); }
  get discoveryIdentityMultidoc() { return this.after(1, 13); }
  get unattendedInstall() { return this.after(1, 13); }
  get multidocKubernetes() { return this.after(1, 13); }
  get filesystemTrimByDefault() { return this.after(1, 13); }
  get workloadIsolationByDefault() { return this.after(1, 13); }
  get multidocSysctl() { return this.after(1, 13); }
}
