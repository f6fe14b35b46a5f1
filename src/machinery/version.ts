/**
 * What this build reports as its version. talosctl gates code paths on the tag (semver), so we report
 * the Talos API level we implement; our own release is carried in `machinedVersion`.
 */
export const API_TAG = "v1.14.0";
export const OS_NAME = "Talos";
export const machinedVersion = "0.1.0";

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
