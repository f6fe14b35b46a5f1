/**
 * Default Kubernetes API server policies `gen config` writes: Pod Security admission (baseline enforced, restricted
 * audited/warned, kube-system exempt), a Metadata-level audit policy, anonymous access only to health endpoints, and
 * the Node + RBAC authorizers. Returned fresh each call so callers may mutate them.
 */
export function podSecurityConfiguration(): Record<string, unknown> {
  return {
    apiVersion: "pod-security.admission.config.k8s.io/v1alpha1",
    defaults: {
      audit: "restricted",
      "audit-version": "latest",
      enforce: "baseline",
      "enforce-version": "latest",
      warn: "restricted",
      "warn-version": "latest",
    },
    exemptions: { namespaces: ["kube-system"], runtimeClasses: [], usernames: [] },
    kind: "PodSecurityConfiguration",
  };
}

export function auditPolicy(): Record<string, unknown> {
  return { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] };
}

export function authenticationConfiguration(): Record<string, unknown> {
  return {
    anonymous: {
      conditions: [{ path: "/livez" }, { path: "/readyz" }, { path: "/healthz" }],
      enabled: true,
    },
    jwt: [],
  };
}

export function authorizers(): { name: string; type: string }[] {
  return [
    { name: "node", type: "Node" },
    { name: "rbac", type: "RBAC" },
  ];
}
