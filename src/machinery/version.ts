/**
 * What this build reports as its version. talosctl gates code paths on the tag (semver), so we report
 * the Talos API level we implement; our own release is carried in `machinedVersion`.
 */
export const API_TAG = "v1.14.0";
export const OS_NAME = "Talos";
export const machinedVersion = "0.1.0";

/**
 * /etc/os-release as upstream's image has it (its OSReleaseTemplate): the kubelet reports PRETTY_NAME as the
 * node's OS-IMAGE, so `kubectl get nodes -o wide` reads "Talos (v1.x.y)".
 */
export function osRelease(name = OS_NAME, version = API_TAG): string {
  const id = name.replaceAll(" ", "_").toLowerCase();
  return [
    `NAME="${name}"`,
    `ID=${id}`,
    `VERSION_ID=${version}`,
    `PRETTY_NAME="${name} (${version})"`,
    'HOME_URL="https://www.talos.dev/"',
    'BUG_REPORT_URL="https://github.com/siderolabs/talos/issues"',
    'VENDOR_NAME="Sidero Labs"',
    'VENDOR_URL="https://www.siderolabs.com/"',
    "",
  ].join("\n");
}

export interface BuildInfo {
  tag: string;
  sha: string;
  built: string;
  goVersion: string;
  os: string;
  arch: string;
}

let built: Readonly<BuildInfo> | undefined;

/** Made once: every Version call asks, and none of it changes while the process runs. */
export function buildInfo(): Readonly<BuildInfo> {
  if (built) return built;
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  return (built = {
    tag: API_TAG,
    sha: process.env.MACHINED_SHA ?? "machined",
    built: process.env.MACHINED_BUILT ?? "",
    // talosctl prints this as "Go version"; we say which runtime actually serves the API.
    goVersion: `node ${process.version}`,
    os: "linux",
    arch,
  });
}
