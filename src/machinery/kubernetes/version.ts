/**
 * The Kubernetes version a component image carries, read from its tag the way upstream's compatibility package
 * (siderolabs/go-kubernetes) does, and the version-dependent choices the control plane makes from it. An image
 * without a parsable tag (no tag, `latest`, a digest only) counts as the newest version, 1.99.0.
 */
export interface KubeVersion {
  major: number;
  minor: number;
  patch: number;
}

const LATEST: KubeVersion = { major: 1, minor: 99, patch: 0 };

/** `registry.k8s.io/kube-apiserver:v1.37.2` → 1.37.2; `repo:v1.30` → 1.30.0; `repo@sha256:...` → 1.99.0. */
export function versionFromImageRef(image: string): KubeVersion {
  const ref = image.split("@")[0];
  const slash = ref.lastIndexOf("/");
  const colon = ref.lastIndexOf(":");
  if (colon <= slash) return LATEST;
  // Tolerant semver, as blang/semver's ParseTolerant: an optional "v", missing minor/patch are 0, pre-release dropped.
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(ref.slice(colon + 1).trim());
  if (!m) return LATEST;
  return { major: Number(m[1]), minor: Number(m[2] ?? 0), patch: Number(m[3] ?? 0) };
}

export function versionString(v: KubeVersion): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

/** v >= major.minor */
export function atLeast(v: KubeVersion, major: number, minor: number): boolean {
  return v.major > major || (v.major === major && v.minor >= minor);
}

/** kube-apiserver reads --authorization-config from 1.29. */
export const supportsAuthorizationConfigFile = (v: KubeVersion) => atLeast(v, 1, 29);
/** StructuredAuthorizationConfiguration is on by default from 1.30 (before, a feature gate turns it on). */
export const structuredAuthorizationByDefault = (v: KubeVersion) => atLeast(v, 1, 30);
/** The `--cloud-provider` flag of kube-apiserver and kube-controller-manager is gone from 1.33. */
export const cloudProviderFlagRemoved = (v: KubeVersion) => atLeast(v, 1, 33);

/** The AuthorizationConfiguration apiVersion the apiserver of this version reads. */
export function authorizationConfigAPIVersion(v: KubeVersion): string {
  return atLeast(v, 1, 30) ? "apiserver.config.k8s.io/v1beta1" : "apiserver.config.k8s.io/v1alpha1";
}

/** kube-scheduler health endpoints: /livez and /readyz from 1.31, /healthz before. */
export function schedulerHealthEndpoints(v: KubeVersion): { liveness: string; readiness: string; startup: string } {
  if (atLeast(v, 1, 31)) return { liveness: "/livez", readiness: "/readyz", startup: "/livez" };
  return { liveness: "/healthz", readiness: "/healthz", startup: "/healthz" };
}
