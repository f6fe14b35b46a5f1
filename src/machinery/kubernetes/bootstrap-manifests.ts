/**
 * The bootstrap manifests a control plane applies once (after upstream's k8stemplates and ManifestController): the
 * kubelet bootstrap token, the CSR bindings that let kubelets join and renew, flannel, kube-proxy, CoreDNS, the
 * in-cluster kubeconfig and the RBAC Talos nodes need. Objects are in their unstructured form as upstream stores
 * them in Manifest resources: what its typed Go objects serialize to, without `status`. `talosctl upgrade-k8s`
 * re-applies these resources itself, so a field that differs here would be a change it pushes to the cluster.
 */
import type { BootstrapManifestsConfigSpec, KubeObjectData } from "../resources/types/k8s-manifests.js";

export interface RenderedManifest {
  /** The Manifest resource id; ids sort in apply order (`00-…` first). */
  id: string;
  objects: KubeObjectData[];
}

export interface BootstrapTokenSecrets {
  bootstrapTokenID: string;
  bootstrapTokenSecret: string;
}

const KUBE_SYSTEM = "kube-system";
const RBAC_GROUP = "rbac.authorization.k8s.io";
const RBAC_V1 = `${RBAC_GROUP}/v1`;

/** Every bootstrap manifest the config asks for, in upstream's order (the apply sorts by id). */
export function renderBootstrapManifests(cfg: BootstrapManifestsConfigSpec, secrets: BootstrapTokenSecrets): RenderedManifest[] {
  if (cfg.podSecurityPolicyEnabled) {
    throw new Error("pod security policies are not supported anymore, please remove the flag from the configuration");
  }
  const out: RenderedManifest[] = [
    { id: "00-kubelet-bootstrapping-token", objects: [kubeletBootstrapTokenSecret(secrets)] },
    { id: "01-csr-node-bootstrap", objects: [csrNodeBootstrap()] },
    { id: "01-csr-approver-role-binding", objects: [csrApproverRoleBinding()] },
    { id: "01-csr-renewal-role-binding", objects: [csrRenewalRoleBinding()] },
    { id: "11-kube-config-in-cluster", objects: [kubeconfigInCluster(cfg)] },
    { id: "11-talos-node-rbac-template", objects: [talosNodesClusterRoleBinding(), talosNodesClusterRole()] },
  ];
  if (cfg.coreDNSEnabled) {
    out.push(
      {
        id: "11-core-dns",
        objects: [coreDNSServiceAccount(), coreDNSClusterRole(), coreDNSClusterRoleBinding(), coreDNSConfigMap(cfg), coreDNSDeployment(cfg)],
      },
      { id: "11-core-dns-svc", objects: [coreDNSService(cfg)] },
    );
  }
  if (cfg.flannelEnabled) {
    out.push({
      id: "05-flannel",
      objects: [flannelClusterRole(cfg), flannelClusterRoleBinding(), flannelServiceAccount(), flannelConfigMap(cfg), flannelDaemonSet(cfg)],
    });
  }
  if (cfg.proxyEnabled) {
    out.push({ id: "10-kube-proxy", objects: [kubeProxyDaemonSet(cfg), kubeProxyServiceAccount(), kubeProxyClusterRoleBinding()] });
  }
  if (cfg.talosAPIServiceEnabled) out.push({ id: "13-talos-service-account-crd", objects: [talosServiceAccountCRD()] });
  return out;
}

// ------------------------------------------------------------------------------------------------ kubelet bootstrap

/** No expiration: the token is the cluster's join secret (`cluster.token`) and stays valid while the config has it. */
export function kubeletBootstrapTokenSecret(s: BootstrapTokenSecrets): KubeObjectData {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `bootstrap-token-${s.bootstrapTokenID}`, namespace: KUBE_SYSTEM },
    type: "bootstrap.kubernetes.io/token",
    stringData: {
      "token-id": s.bootstrapTokenID,
      "token-secret": s.bootstrapTokenSecret,
      "usage-bootstrap-authentication": "true",
      "auth-extra-groups": "system:bootstrappers:nodes",
    },
  };
}

const group = (name: string) => ({ kind: "Group", name, apiGroup: RBAC_GROUP });
const serviceAccount = (name: string) => ({ kind: "ServiceAccount", name, namespace: KUBE_SYSTEM });
const clusterRoleRef = (name: string) => ({ kind: "ClusterRole", name, apiGroup: RBAC_GROUP });

function clusterRoleBinding(metadata: KubeObjectData, subjects: unknown[], role: string): KubeObjectData {
  return { apiVersion: RBAC_V1, kind: "ClusterRoleBinding", metadata, subjects, roleRef: clusterRoleRef(role) };
}

export function csrNodeBootstrap(): KubeObjectData {
  return clusterRoleBinding(
    { name: "system-bootstrap-node-bootstrapper" },
    [group("system:bootstrappers:nodes"), group("system:nodes")],
    "system:node-bootstrapper",
  );
}

export function csrApproverRoleBinding(): KubeObjectData {
  return clusterRoleBinding(
    { name: "system-bootstrap-approve-node-client-csr" },
    [group("system:bootstrappers:nodes")],
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
  );
}

export function csrRenewalRoleBinding(): KubeObjectData {
  return clusterRoleBinding(
    { name: "system-bootstrap-node-renewal" },
    [group("system:nodes")],
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
  );
}

// ------------------------------------------------------------------------------------------------ in-cluster kubeconfig

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** kube-proxy's kubeconfig: its service account token against `server` (KubePrism, so it works before kube-proxy does). */
export function kubeconfigInCluster(cfg: Pick<BootstrapManifestsConfigSpec, "server">): KubeObjectData {
  // clientcmd.Write's layout, field for field.
  const kubeconfig = `apiVersion: v1
clusters:
- cluster:
    certificate-authority: ${SA_DIR}/ca.crt
    server: ${yamlScalar(cfg.server)}
  name: local
contexts:
- context:
    cluster: local
    user: service-account
  name: local
current-context: local
kind: Config
users:
- name: service-account
  user:
    tokenFile: ${SA_DIR}/token
`;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "kubeconfig-in-cluster", namespace: KUBE_SYSTEM },
    data: { kubeconfig },
  };
}

/** A URL is a plain YAML scalar unless it holds characters YAML reads otherwise; then it is double-quoted. */
function yamlScalar(s: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9:/._\-[\]%@+~]*$/.test(s) && !s.includes(": ") && !s.endsWith(":") ? s : JSON.stringify(s);
}

// ------------------------------------------------------------------------------------------------ Talos node RBAC

const BOOTSTRAPPING_LABELS = { "kubernetes.io/bootstrapping": "rbac-defaults" };
const AUTOUPDATE = { "rbac.authorization.kubernetes.io/autoupdate": "true" };

/** Workers watch the `kubernetes` EndpointSlice with their kubelet identity (KubePrism's endpoint discovery). */
export function talosNodesClusterRoleBinding(): KubeObjectData {
  return clusterRoleBinding(
    { name: "system:talos-nodes", labels: { ...BOOTSTRAPPING_LABELS }, annotations: { ...AUTOUPDATE } },
    [group("system:nodes")],
    "system:talos-nodes",
  );
}

export function talosNodesClusterRole(): KubeObjectData {
  return {
    apiVersion: RBAC_V1,
    kind: "ClusterRole",
    metadata: { name: "system:talos-nodes", labels: { ...BOOTSTRAPPING_LABELS } },
    rules: [{ apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["get", "list", "watch"] }],
  };
}

// ------------------------------------------------------------------------------------------------ CoreDNS

const KUBE_DNS = { "k8s-app": "kube-dns" };

/** Service kube-dns with the fixed address(es) every kubelet hands pods as their resolver. */
export function coreDNSService(cfg: Pick<BootstrapManifestsConfigSpec, "dnsServiceIP" | "dnsServiceIPv6">): KubeObjectData {
  const clusterIPs: string[] = [];
  const ipFamilies: string[] = [];
  if (cfg.dnsServiceIP) {
    clusterIPs.push(cfg.dnsServiceIP);
    ipFamilies.push("IPv4");
  }
  if (cfg.dnsServiceIPv6) {
    clusterIPs.push(cfg.dnsServiceIPv6);
    ipFamilies.push("IPv6");
  }
  const spec: KubeObjectData = {
    selector: { ...KUBE_DNS },
    ports: [
      { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
      { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
      { name: "metrics", port: 9153, protocol: "TCP", targetPort: 9153 },
    ],
    ipFamilyPolicy: cfg.dnsServiceIP && cfg.dnsServiceIPv6 ? "RequireDualStack" : "SingleStack",
  };
  const clusterIP = cfg.dnsServiceIP || cfg.dnsServiceIPv6;
  if (clusterIP) spec.clusterIP = clusterIP;
  if (clusterIPs.length > 0) {
    spec.clusterIPs = clusterIPs;
    spec.ipFamilies = ipFamilies;
  }
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "kube-dns",
      namespace: KUBE_SYSTEM,
      annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": "9153" },
      labels: { ...KUBE_DNS, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS" },
    },
    spec,
  };
}

export function coreDNSServiceAccount(): KubeObjectData {
  return { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "coredns", namespace: KUBE_SYSTEM } };
}

export function coreDNSClusterRoleBinding(): KubeObjectData {
  return clusterRoleBinding(
    { name: "system:coredns", labels: { ...BOOTSTRAPPING_LABELS }, annotations: { ...AUTOUPDATE } },
    [serviceAccount("coredns")],
    "system:coredns",
  );
}

export function coreDNSClusterRole(): KubeObjectData {
  return {
    apiVersion: RBAC_V1,
    kind: "ClusterRole",
    metadata: { name: "system:coredns", labels: { ...BOOTSTRAPPING_LABELS } },
    rules: [
      { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
    ],
  };
}

/** The Corefile: upstream's text byte for byte (its odd 7-space indents included), with the cluster domain. */
export function coreDNSConfigMap(cfg: Pick<BootstrapManifestsConfigSpec, "clusterDomain">): KubeObjectData {
  const d = cfg.clusterDomain;
  let corefile = `.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    log . {
        class error
    }
    prometheus :9153

    kubernetes ${d} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30`;
  corefile += d
    ? ` {
       disable success ${d}
       disable denial ${d}
    }
`
    : "\n";
  corefile += `    loop
    reload
    loadbalance
}
`;
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "coredns", namespace: KUBE_SYSTEM }, data: { Corefile: corefile } };
}

/** Two replicas spread across nodes; tolerates the control-plane taint so a single-node cluster gets DNS. */
export function coreDNSDeployment(cfg: Pick<BootstrapManifestsConfigSpec, "coreDNSImage">): KubeObjectData {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "coredns", namespace: KUBE_SYSTEM, labels: { ...KUBE_DNS, "kubernetes.io/name": "CoreDNS" } },
    spec: {
      replicas: 2,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
      selector: { matchLabels: { ...KUBE_DNS } },
      template: {
        metadata: { labels: { ...KUBE_DNS } },
        spec: {
          nodeSelector: { "kubernetes.io/os": "linux" },
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    labelSelector: { matchExpressions: [{ key: "k8s-app", operator: "In", values: ["kube-dns"] }] },
                    topologyKey: "kubernetes.io/hostname",
                  },
                },
              ],
            },
          },
          serviceAccountName: "coredns",
          priorityClassName: "system-cluster-critical",
          tolerations: [
            { key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" },
            { key: "node.cloudprovider.kubernetes.io/uninitialized", operator: "Exists", effect: "NoSchedule" },
          ],
          containers: [
            {
              name: "coredns",
              image: cfg.coreDNSImage,
              imagePullPolicy: "IfNotPresent",
              resources: { limits: { memory: "170Mi" }, requests: { cpu: "100m", memory: "70Mi" } },
              env: [{ name: "GOMEMLIMIT", value: "161MiB" }],
              args: ["-conf", "/etc/coredns/Corefile"],
              volumeMounts: [{ name: "config-volume", mountPath: "/etc/coredns", readOnly: true }],
              ports: [
                { name: "dns", protocol: "UDP", containerPort: 53 },
                { name: "dns-tcp", protocol: "TCP", containerPort: 53 },
                { name: "metrics", protocol: "TCP", containerPort: 9153 },
              ],
              livenessProbe: {
                httpGet: { path: "/health", port: 8080, scheme: "HTTP" },
                initialDelaySeconds: 60,
                timeoutSeconds: 5,
                successThreshold: 1,
                failureThreshold: 5,
              },
              readinessProbe: { httpGet: { path: "/ready", port: 8181, scheme: "HTTP" } },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
                readOnlyRootFilesystem: true,
              },
            },
          ],
          dnsPolicy: "Default",
          volumes: [{ name: "config-volume", configMap: { name: "coredns", items: [{ key: "Corefile", path: "Corefile" }] } }],
        },
      },
    },
  };
}

// ------------------------------------------------------------------------------------------------ flannel

const FLANNEL_LABELS = { "k8s-app": "flannel" };
const FLANNEL_NODE_LABELS = { "k8s-app": "flannel", tier: "node" };
const ALL_TAINTS = [
  { effect: "NoSchedule", operator: "Exists" },
  { effect: "NoExecute", operator: "Exists" },
];

export function flannelClusterRole(cfg: Pick<BootstrapManifestsConfigSpec, "flannelKubeNetworkPoliciesEnabled">): KubeObjectData {
  const rules: KubeObjectData[] = [
    { apiGroups: [""], resources: ["pods", "nodes", "namespaces"], verbs: ["get", "list", "watch"] },
    { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
  ];
  if (cfg.flannelKubeNetworkPoliciesEnabled) {
    rules.push(
      { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["list", "watch"] },
      { apiGroups: ["policy.networking.k8s.io"], resources: ["adminnetworkpolicies", "baselineadminnetworkpolicies"], verbs: ["list", "watch"] },
    );
  }
  return { apiVersion: RBAC_V1, kind: "ClusterRole", metadata: { name: "flannel", labels: { ...FLANNEL_LABELS } }, rules };
}

export function flannelClusterRoleBinding(): KubeObjectData {
  return clusterRoleBinding({ name: "flannel", labels: { ...FLANNEL_LABELS } }, [serviceAccount("flannel")], "flannel");
}

export function flannelServiceAccount(): KubeObjectData {
  return { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "flannel", namespace: KUBE_SYSTEM, labels: { ...FLANNEL_LABELS } } };
}

/**
 * The CNI chain the init container installs (flannel, whose plugin binary the node ships in /opt/cni/bin, then portmap).
 * cniVersion 0.4.0 where upstream writes 1.0.0: the flannel plugin the node ships is containernetworking/plugins
 * v0.9.1's (the newer flannel-io/cni-plugin cannot be fetched here), which speaks CNI up to 0.4.0.
 */
export const FLANNEL_CNI_VERSION = "0.4.0";
const FLANNEL_CNI_CONF = `{
  "name": "cbr0",
  "cniVersion": "${FLANNEL_CNI_VERSION}",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}`;

export function flannelConfigMap(cfg: Pick<BootstrapManifestsConfigSpec, "podCIDRs">): KubeObjectData {
  // Key order and omissions as Go's json.MarshalIndent of upstream's netConf struct (omitempty on all but Backend).
  let network: string | undefined;
  let ipv6Network: string | undefined;
  let enableIPv6: boolean | undefined;
  for (const cidr of cfg.podCIDRs) {
    if (cidr.includes(".")) network = cidr;
    else {
      ipv6Network = cidr;
      enableIPv6 = true;
    }
  }
  const netConf = {
    Network: network,
    IPv6Network: ipv6Network,
    EnableIPv6: enableIPv6,
    EnableIPv4: network === undefined ? false : undefined,
    Backend: { Type: "vxlan", Port: 4789 },
  };
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "kube-flannel-cfg", namespace: KUBE_SYSTEM, labels: { ...FLANNEL_NODE_LABELS } },
    data: { "cni-conf.json": FLANNEL_CNI_CONF, "net-conf.json": JSON.stringify(netConf, null, 2) },
  };
}

const fieldRef = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } });

export function flannelDaemonSet(
  cfg: Pick<
    BootstrapManifestsConfigSpec,
    "flannelImage" | "flannelExtraArgs" | "flannelKubeServiceHost" | "flannelKubeServicePort" | "flannelKubeNetworkPoliciesEnabled" | "flannelKubeNetworkPoliciesImage"
  >,
): KubeObjectData {
  const env: KubeObjectData[] = [
    { name: "POD_NAME", ...fieldRef("metadata.name") },
    { name: "POD_NAMESPACE", ...fieldRef("metadata.namespace") },
    { name: "EVENT_QUEUE_DEPTH", value: "5000" },
    { name: "CONT_WHEN_CACHE_NOT_READY", value: "false" },
  ];
  // flanneld talks to the API through KubePrism: the service network does not work before flannel and kube-proxy do.
  if (cfg.flannelKubeServiceHost) env.push({ name: "KUBERNETES_SERVICE_HOST", value: cfg.flannelKubeServiceHost });
  if (cfg.flannelKubeServicePort) env.push({ name: "KUBERNETES_SERVICE_PORT", value: cfg.flannelKubeServicePort });
  const volumes: KubeObjectData[] = [
    { name: "run", hostPath: { path: "/run/flannel" } },
    { name: "cni", hostPath: { path: "/etc/cni/net.d" } },
    { name: "flannel-cfg", configMap: { name: "kube-flannel-cfg" } },
  ];
  const containers: KubeObjectData[] = [
    {
      name: "kube-flannel",
      image: cfg.flannelImage,
      command: ["/opt/bin/flanneld"],
      args: ["--ip-masq", "--kube-subnet-mgr", ...cfg.flannelExtraArgs],
      env,
      resources: { requests: { cpu: "100m", memory: "50Mi" } },
      securityContext: { capabilities: { add: ["NET_ADMIN", "NET_RAW"] }, privileged: false },
      volumeMounts: [
        { name: "run", mountPath: "/run/flannel" },
        { name: "flannel-cfg", mountPath: "/etc/kube-flannel/" },
      ],
    },
  ];
  if (cfg.flannelKubeNetworkPoliciesEnabled) {
    volumes.push({ name: "lib-modules", hostPath: { path: "/usr/lib/modules" } });
    containers.push({
      name: "kube-network-policies",
      image: cfg.flannelKubeNetworkPoliciesImage,
      command: ["/bin/netpol", "--hostname-override=$(MY_NODE_NAME)", "--v=2"],
      env: [{ name: "MY_NODE_NAME", ...fieldRef("spec.nodeName") }],
      resources: { requests: { cpu: "100m", memory: "50Mi" } },
      securityContext: { capabilities: { add: ["NET_ADMIN"] }, privileged: true },
      volumeMounts: [{ name: "lib-modules", mountPath: "/lib/modules", readOnly: true }],
    });
  }
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "kube-flannel", namespace: KUBE_SYSTEM, labels: { ...FLANNEL_NODE_LABELS } },
    spec: {
      selector: { matchLabels: { ...FLANNEL_NODE_LABELS } },
      template: {
        metadata: { labels: { ...FLANNEL_NODE_LABELS } },
        spec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: "kubernetes.io/os", operator: "In", values: ["linux"] }] }],
              },
            },
          },
          containers,
          initContainers: [
            {
              name: "install-config",
              image: cfg.flannelImage,
              command: ["cp"],
              args: ["-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"],
              resources: {},
              volumeMounts: [
                { name: "cni", mountPath: "/etc/cni/net.d" },
                { name: "flannel-cfg", mountPath: "/etc/kube-flannel/" },
              ],
            },
          ],
          hostNetwork: true,
          priorityClassName: "system-node-critical",
          serviceAccountName: "flannel",
          tolerations: ALL_TAINTS.map((t) => ({ ...t })),
          volumes,
        },
      },
      updateStrategy: {},
    },
  };
}

// ------------------------------------------------------------------------------------------------ kube-proxy

const KUBE_PROXY_LABELS = { tier: "node", "k8s-app": "kube-proxy" };

export function kubeProxyDaemonSet(cfg: Pick<BootstrapManifestsConfigSpec, "proxyImage" | "proxyArgs">): KubeObjectData {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "kube-proxy", namespace: KUBE_SYSTEM, labels: { ...KUBE_PROXY_LABELS } },
    spec: {
      selector: { matchLabels: { ...KUBE_PROXY_LABELS } },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: { ...KUBE_PROXY_LABELS } },
        spec: {
          containers: [
            {
              name: "kube-proxy",
              image: cfg.proxyImage,
              command: ["/usr/local/bin/kube-proxy", ...cfg.proxyArgs],
              env: [
                { name: "NODE_NAME", ...fieldRef("spec.nodeName") },
                { name: "POD_IP", ...fieldRef("status.podIP") },
              ],
              resources: {},
              securityContext: { privileged: true },
              volumeMounts: [
                { name: "lib-modules", mountPath: "/lib/modules", readOnly: true },
                { name: "ssl-certs-host", mountPath: "/etc/ssl/certs", readOnly: true },
                { name: "kubeconfig", mountPath: "/etc/kubernetes", readOnly: true },
              ],
            },
          ],
          hostNetwork: true,
          priorityClassName: "system-cluster-critical",
          serviceAccountName: "kube-proxy",
          tolerations: ALL_TAINTS.map((t) => ({ ...t })),
          volumes: [
            { name: "lib-modules", hostPath: { path: "/usr/lib/modules" } },
            { name: "ssl-certs-host", hostPath: { path: "/etc/ssl/certs" } },
            { name: "kubeconfig", configMap: { name: "kubeconfig-in-cluster" } },
          ],
        },
      },
    },
  };
}

export function kubeProxyServiceAccount(): KubeObjectData {
  return { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "kube-proxy", namespace: KUBE_SYSTEM } };
}

export function kubeProxyClusterRoleBinding(): KubeObjectData {
  return clusterRoleBinding({ name: "kube-proxy" }, [serviceAccount("kube-proxy")], "system:node-proxier");
}

// ------------------------------------------------------------------------------------------------ Talos API access

/** The talos.dev ServiceAccount CRD (machine.features.kubernetesTalosAPIAccess). */
export function talosServiceAccountCRD(): KubeObjectData {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "serviceaccounts.talos.dev" },
    spec: {
      conversion: { strategy: "None" },
      group: "talos.dev",
      names: { kind: "ServiceAccount", listKind: "ServiceAccountList", plural: "serviceaccounts", singular: "serviceaccount", shortNames: ["tsa"] },
      scope: "Namespaced",
      versions: [
        {
          name: "v1alpha1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: { type: "object", properties: { roles: { type: "array", items: { type: "string" } } } },
                status: { type: "object", properties: { failureReason: { type: "string" } } },
              },
            },
          },
        },
      ],
    },
  };
}
