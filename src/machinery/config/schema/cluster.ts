/**
 * `cluster` section of the v1alpha1 document (upstream ClusterConfig and the types it embeds).
 */
import * as z from "zod";
import {
  args,
  bool,
  certAndKey,
  certOnly,
  duration,
  env,
  int,
  keyOnly,
  resources,
  str,
  strList,
  strMap,
  unstructured,
  volumeMount,
} from "./primitives.js";

/** Upstream trims leading blank lines of inline manifests when decoding (a `|` block often starts with one). */
const manifestContents = str.transform((s) => s.replace(/^[\t\n\v\f\r]+/, ""));

const cni = z.strictObject({
  name: str.optional(),
  urls: strList.optional(),
  flannel: z.strictObject({ extraArgs: strList.optional(), kubeNetworkPoliciesEnabled: bool.optional() }).optional(),
});

const clusterNetwork = z.strictObject({
  cni: cni.optional(),
  dnsDomain: str.optional(),
  podSubnets: strList.optional(),
  serviceSubnets: strList.optional(),
});

const apiServer = z.strictObject({
  image: str.optional(),
  extraArgs: args.optional(),
  extraVolumes: z.array(volumeMount).optional(),
  env: env.optional(),
  certSANs: strList.optional(),
  disablePodSecurityPolicy: bool.optional(),
  admissionControl: z.array(z.strictObject({ name: str.optional(), configuration: unstructured.optional() })).optional(),
  auditPolicy: unstructured.optional(),
  resources: resources.optional(),
  authorizationConfig: z
    .array(z.strictObject({ type: str.optional(), name: str.optional(), webhook: unstructured.optional() }))
    .optional(),
});

const controllerManager = z.strictObject({
  image: str.optional(),
  extraArgs: args.optional(),
  extraVolumes: z.array(volumeMount).optional(),
  env: env.optional(),
  resources: resources.optional(),
});

const proxy = z.strictObject({
  disabled: bool.optional(),
  image: str.optional(),
  mode: str.optional(),
  extraArgs: args.optional(),
});

const scheduler = z.strictObject({
  image: str.optional(),
  extraArgs: args.optional(),
  extraVolumes: z.array(volumeMount).optional(),
  env: env.optional(),
  resources: resources.optional(),
  config: unstructured.optional(),
});

const discovery = z.strictObject({
  enabled: bool.optional(),
  registries: z
    .strictObject({
      kubernetes: z.strictObject({ disabled: bool.optional() }).optional(),
      service: z.strictObject({ disabled: bool.optional(), endpoint: str.optional() }).optional(),
    })
    .optional(),
});

const etcd = z.strictObject({
  image: str.optional(),
  ca: certAndKey.optional(),
  extraArgs: args.optional(),
  subnet: str.optional(),
  advertisedSubnets: strList.optional(),
  listenSubnets: strList.optional(),
});

export const cluster = z.strictObject({
  id: str.optional(),
  secret: str.optional(),
  controlPlane: z.strictObject({ endpoint: str.optional(), localAPIServerPort: int.optional() }).optional(),
  clusterName: str.optional(),
  network: clusterNetwork.optional(),
  token: str.optional(),
  aescbcEncryptionSecret: str.optional(),
  secretboxEncryptionSecret: str.optional(),
  ca: certAndKey.optional(),
  acceptedCAs: z.array(certOnly).optional(),
  aggregatorCA: certAndKey.optional(),
  serviceAccount: keyOnly.optional(),
  apiServer: apiServer.optional(),
  controllerManager: controllerManager.optional(),
  proxy: proxy.optional(),
  scheduler: scheduler.optional(),
  discovery: discovery.optional(),
  etcd: etcd.optional(),
  coreDNS: z.strictObject({ disabled: bool.optional(), image: str.optional() }).optional(),
  externalCloudProvider: z.strictObject({ enabled: bool.optional(), manifests: strList.optional() }).optional(),
  extraManifests: strList.optional(),
  extraManifestHeaders: strMap.optional(),
  inlineManifests: z.array(z.strictObject({ name: str.optional(), contents: manifestContents.optional() })).optional(),
  adminKubeconfig: z.strictObject({ certLifetime: duration.optional() }).optional(),
  allowSchedulingOnMasters: bool.optional(),
  allowSchedulingOnControlPlanes: bool.optional(),
});
