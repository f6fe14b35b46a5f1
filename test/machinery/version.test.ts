/** /etc/os-release as upstream's image writes it (its OSReleaseTemplate; upstream's own test case for v1.0.0). */
import { describe, expect, it } from "vitest";
import { API_TAG, osRelease } from "../../src/machinery/version.js";

describe("osRelease", () => {
  it("renders upstream's template", () => {
    expect(osRelease("Talos", "v1.0.0")).toBe(
      'NAME="Talos"\nID=talos\nVERSION_ID=v1.0.0\nPRETTY_NAME="Talos (v1.0.0)"\nHOME_URL="https://www.talos.dev/"\n' +
        'BUG_REPORT_URL="https://github.com/siderolabs/talos/issues"\nVENDOR_NAME="Sidero Labs"\nVENDOR_URL="https://www.siderolabs.com/"\n',
    );
    expect(osRelease("Talos New", "v1.0.0")).toMatch(/^NAME="Talos New"\nID=talos_new\n/);
  });

  it("defaults to this build's name and API tag (what the kubelet reports as OS-IMAGE)", () => {
    expect(osRelease()).toContain(`PRETTY_NAME="Talos (${API_TAG})"\n`);
  });
});
