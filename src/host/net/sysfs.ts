/**
 * Links as sysfs shows them, for PID 1's early network before iproute2's view is needed: synchronous, since
 * it runs once while nothing else does.
 */
import { readdirSync, readFileSync } from "node:fs";

/** First link that looks like ethernet (type 1) other than lo, by ifindex. */
export function firstEthernet(sysClassNet = "/sys/class/net"): string | undefined {
  const links: Array<{ name: string; index: number }> = [];
  for (const name of readdirSync(sysClassNet)) {
    try {
      const type = readFileSync(`${sysClassNet}/${name}/type`, "utf8").trim();
      const index = Number(readFileSync(`${sysClassNet}/${name}/ifindex`, "utf8").trim());
      if (type === "1" && name !== "lo" && !existsVirtual(sysClassNet, name)) links.push({ name, index });
    } catch {
      // link vanished
    }
  }
  return links.sort((a, b) => a.index - b.index)[0]?.name;
}

function existsVirtual(sysClassNet: string, name: string): boolean {
  try {
    readFileSync(`${sysClassNet}/${name}/device/uevent`);
    return false;
  } catch {
    return true; // no backing device: a bridge, veth, dummy ...
  }
}
