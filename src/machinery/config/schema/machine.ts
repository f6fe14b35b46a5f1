/**
 * `machine` section of the v1alpha1 document (upstream MachineConfig and the types it embeds).
 */
import * as z from "zod";
import { network } from "./network.js";
import {
  args,
  base64,
  bool,
  certAndKey,
  certOnly,
  duration,
  env,
  int,
  str,
  strList,
  strMap,
  uint,
  unstructured,
} from "./primitives.js";

const idMapping = z.strictObject({ containerID: uint.optional(), hostID: uint.optional(), size: uint.optional() });

export const extraMount = z.strictObject({
  destination: str.optional(),
  type: str.optional(),
  source: str.optional(),
  options: strList.optional(),
  uidMappings: z.array(idMapping).optional(),
  gidMappings: z.array(idMapping).optional(),
});

export const kubelet = z.strictObject({
  image: str.optional(),
  clusterDNS: strList.optional(),
  extraArgs: args.optional(),
  extraMounts: z.array(extraMount).optional(),
  extraConfig: unstructured.optional(),
  credentialProviderConfig: unstructured.optional(),
  defaultRuntimeSeccompProfileEnabled: bool.optional(),
  registerWithFQDN: bool.optional(),
  nodeIP: z.strictObject({ validSubnets: strList.optional() }).optional(),
  skipNodeRegistration: bool.optional(),
  disableManifestsDirectory: bool.optional(),
});

export const diskSelector = z.strictObject({
  size: str.optional(),
  name: str.optional(),
  model: str.optional(),
  serial: str.optional(),
  modalias: str.optional(),
  uuid: str.optional(),
  wwid: str.optional(),
  type: str.optional(),
  busPath: str.optional(),
});

export const install = z.strictObject({
  disk: str.optional(),
  diskSelector: diskSelector.optional(),
  extraKernelArgs: strList.optional(),
  image: str.optional(),
  extensions: z.array(z.strictObject({ image: str.optional() })).optional(),
  bootloader: bool.optional(),
  wipe: bool.optional(),
  legacyBIOSSupport: bool.optional(),
  grubUseUKICmdline: bool.optional(),
});

const machineDisk = z.strictObject({
  device: str.optional(),
  // size is bytes or a human-readable string ("100 MB"); go-yaml decodes both into a string first.
  partitions: z.array(z.strictObject({ size: str.optional(), mountpoint: str.optional() })).optional(),
});

const machineFile = z.strictObject({
  content: str.optional(),
  permissions: uint.optional(),
  path: str.optional(),
  op: str.optional(),
});

const time = z.strictObject({ disabled: bool.optional(), servers: strList.optional(), bootTimeout: duration.optional() });

const registries = z.strictObject({
  mirrors: z
    .record(
      z.string(),
      z.strictObject({ endpoints: strList.optional(), overridePath: bool.optional(), skipFallback: bool.optional() }),
    )
    .optional(),
  config: z
    .record(
      z.string(),
      z.strictObject({
        tls: z
          .strictObject({ clientIdentity: certAndKey.optional(), ca: base64.optional(), insecureSkipVerify: bool.optional() })
          .optional(),
        auth: z
          .strictObject({
            username: str.optional(),
            password: str.optional(),
            auth: str.optional(),
            identityToken: str.optional(),
          })
          .optional(),
      }),
    )
    .optional(),
});

const encryptionKey = z.strictObject({
  static: z.strictObject({ passphrase: str.optional() }).optional(),
  nodeID: z.strictObject({}).optional(),
  kms: z.strictObject({ endpoint: str.optional() }).optional(),
  slot: int.optional(),
  tpm: z.strictObject({ checkSecurebootStatusOnEnroll: bool.optional() }).optional(),
});

const encryption = z.strictObject({
  provider: str.optional(),
  keys: z.array(encryptionKey).optional(),
  cipher: str.optional(),
  keySize: uint.optional(),
  blockSize: uint.optional(),
  options: strList.optional(),
});

const features = z.strictObject({
  rbac: bool.optional(),
  stableHostname: bool.optional(),
  kubernetesTalosAPIAccess: z
    .strictObject({
      enabled: bool.optional(),
      allowedRoles: strList.optional(),
      allowedKubernetesNamespaces: strList.optional(),
    })
    .optional(),
  apidCheckExtKeyUsage: bool.optional(),
  diskQuotaSupport: bool.optional(),
  kubePrism: z.strictObject({ enabled: bool.optional(), port: int.optional() }).optional(),
  hostDNS: z
    .strictObject({
      enabled: bool.optional(),
      forwardKubeDNSToHost: bool.optional(),
      resolveMemberNames: bool.optional(),
    })
    .optional(),
  imageCache: z.strictObject({ localEnabled: bool.optional() }).optional(),
  nodeAddressSortAlgorithm: str.optional(),
});

const logging = z.strictObject({
  destinations: z
    .array(z.strictObject({ endpoint: str.optional(), format: str.optional(), extraTags: strMap.optional() }))
    .optional(),
});

const kernel = z.strictObject({
  modules: z.array(z.strictObject({ name: str.optional(), parameters: strList.optional() })).optional(),
});

export const machine = z.strictObject({
  type: str.optional(),
  token: str.optional(),
  ca: certAndKey.optional(),
  acceptedCAs: z.array(certOnly).optional(),
  certSANs: strList.optional(),
  controlPlane: z
    .strictObject({
      controllerManager: z.strictObject({ disabled: bool.optional() }).optional(),
      scheduler: z.strictObject({ disabled: bool.optional() }).optional(),
    })
    .optional(),
  kubelet: kubelet.optional(),
  pods: z.array(unstructured).optional(),
  network: network.optional(),
  disks: z.array(machineDisk).optional(),
  install: install.optional(),
  files: z.array(machineFile).optional(),
  env: env.optional(),
  time: time.optional(),
  sysctls: strMap.optional(),
  sysfs: strMap.optional(),
  registries: registries.optional(),
  systemDiskEncryption: z.strictObject({ state: encryption.optional(), ephemeral: encryption.optional() }).optional(),
  features: features.optional(),
  udev: z.strictObject({ rules: strList.optional() }).optional(),
  logging: logging.optional(),
  kernel: kernel.optional(),
  seccompProfiles: z.array(z.strictObject({ name: str.optional(), value: unstructured.optional() })).optional(),
  baseRuntimeSpecOverrides: unstructured.optional(),
  nodeLabels: strMap.optional(),
  nodeAnnotations: strMap.optional(),
  nodeTaints: strMap.optional(),
});
