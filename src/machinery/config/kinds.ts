/**
 * The multi-document kinds upstream Talos registers (pkg/machinery/config/types/*, apiVersion v1alpha1).
 * Documents of these kinds load without a warning; any other kind is kept untouched and reported.
 */

export const KNOWN_KINDS: ReadonlySet<string> = new Set([
  // runtime
  "EnvironmentConfig", "EtcFileConfig", "EventSinkConfig", "ExtensionServiceConfig", "KernelModuleConfig",
  "KmsgLogConfig", "OOMConfig", "SecurityProfileConfig", "SysctlConfig", "SysfsConfig", "UdevRulesConfig",
  "UnattendedInstallConfig", "WatchdogTimerConfig",
  // network
  "BGPInstanceConfig", "BlackholeRouteConfig", "BondConfig", "BridgeConfig", "DHCPv4Config", "DHCPv6Config",
  "DummyLinkConfig", "EthernetConfig", "HCloudVIPConfig", "HTTPProbeConfig", "HostnameConfig", "KubeSpanConfig",
  "KubeSpanEndpointsConfig", "Layer2VIPConfig", "LinkAliasConfig", "LinkConfig", "NetworkDefaultActionConfig",
  "NetworkRuleConfig", "ResolverConfig", "RoutingRuleConfig", "StaticHostConfig", "TCPProbeConfig",
  "TimeSyncConfig", "VLANConfig", "VRFConfig", "VethConfig", "WireguardConfig",
  // block and storage
  "ExistingVolumeConfig", "ExternalVolumeConfig", "FilesystemScrubConfig", "FilesystemTrimConfig",
  "RawVolumeConfig", "SwapVolumeConfig", "UserVolumeConfig", "VolumeConfig", "ZswapConfig",
  "LVMLogicalVolumeConfig", "LVMVolumeGroupConfig", "RAIDArrayConfig",
  // cri
  "CRIBaseRuntimeSpecConfig", "CRICustomizationConfig", "ImageCacheConfig", "RegistryAuthConfig",
  "RegistryMirrorConfig", "RegistryTLSConfig",
  // kubernetes
  "KubeAPIServerCAConfig", "KubeAPIServerConfig", "KubeAdmissionControlConfig", "KubeAggregatorCAConfig",
  "KubeAuditPolicyConfig", "KubeAuthenticationConfig", "KubeAuthorizerConfig", "KubeClusterConfig",
  "KubeControllerManagerConfig", "KubeCoreDNSConfig", "KubeCredentialProviderConfig", "KubeEtcdEncryptionConfig",
  "KubeExternalManifestConfig", "KubeFlannelCNIConfig", "KubeInlineManifestConfig", "KubeNetworkConfig",
  "KubeNodeConfig", "KubePrismConfig", "KubeProxyConfig", "KubeSchedulerConfig", "KubeServiceAccountConfig",
  "KubeStaticPodConfig", "KubeTalosAPIAccessConfig", "KubeletConfig",
  // other
  "ContainerConfig", "DiscoveryIdentityConfig", "DiscoveryServiceConfig", "ImageVerificationConfig",
  "PCIDriverRebindConfig", "SideroLinkConfig", "TrustedRootsConfig",
]);

/** All registered kinds use this apiVersion; a known kind under another apiVersion is treated as unknown. */
export const KIND_API_VERSION = "v1alpha1";

/** Keys whose presence marks the legacy v1alpha1 document even without `version:` (as upstream's decoder does). */
export const V1ALPHA1_KEYS: readonly string[] = ["version", "machine", "cluster", "debug", "persist"];
