/**
 * Checks of `machine.install`, which depend on how the node runs:
 *  - metal: the node installs itself, so a disk (`disk` as an absolute device path, or a `diskSelector`) is needed,
 *    unless an UnattendedInstallConfig document takes over (upstream made machine.install optional for that);
 *  - container: nothing is installed; the section is ignored;
 *  - local: machined is a plain process; the disk may be absent or any absolute file path (a disk-image file).
 */
import { parseBytes } from "../net.js";
import type { InstallSection } from "../schema.js";
import type { Report, ValidationMode } from "./report.js";

const p = "machine.install";

export function checkInstall(
  install: InstallSection | undefined,
  mode: ValidationMode,
  hasUnattendedInstall: boolean,
  r: Report,
): void {
  if (mode === "container") return;
  if (install?.diskSelector?.size !== undefined) {
    const bad = checkSizeMatcher(install.diskSelector.size);
    if (bad) r.error(`${p}.diskSelector.size`, bad);
  }
  if (install?.disk !== undefined && install.disk !== "" && !install.disk.startsWith("/")) {
    r.error(`${p}.disk`, `expected an absolute ${mode === "local" ? "file or device" : "device"} path, got ${JSON.stringify(install.disk)}`);
  }
  if (mode === "metal") {
    const hasSelector = install?.diskSelector !== undefined && Object.keys(install.diskSelector).length > 0;
    if (!install?.disk && !hasSelector && !hasUnattendedInstall) {
      r.error(p, "either install disk or diskSelector should be defined");
    }
  }
  if ((install?.extraKernelArgs?.length ?? 0) > 0 && install?.grubUseUKICmdline) {
    r.error(p, "install.extraKernelArgs and install.grubUseUKICmdline can't be used together");
  }
  const seen = new Set<string>();
  install?.extensions?.forEach((e, i) => {
    const image = e.image ?? "";
    if (seen.has(image)) r.error(`${p}.extensions[${i}].image`, `duplicate system extension ${JSON.stringify(image)}`);
    seen.add(image);
  });
  if (seen.size > 0) {
    r.warn(`${p}.extensions`, ".machine.install.extensions is deprecated, please see https://docs.siderolabs.com/talos/latest/platform-specific-installations/boot-assets");
  }
}

/** diskSelector.size: `[>=|<=|>|<|==]<size>[unit]`, e.g. `>= 100GB`. */
function checkSizeMatcher(s: string): string | undefined {
  const m = /^\s*(>=|<=|>|<|==)?\s*(.*)$/.exec(s);
  const size = m?.[2].trim() ?? "";
  return parseBytes(size) === undefined ? `failed to parse disk size ${JSON.stringify(s)}` : undefined;
}
