/** The kernel's host and domain name → the HostnameStatus spec (id `hostname`). */
import { closeSync, openSync, readFileSync } from "node:fs";
import path from "node:path";
import { readDomainname, readHostname } from "../proc/system.js";
import { native, pollable } from "./rtnl.js";
import { watchFiles } from "./watch-files.js";
import type { HostnameStatusSpec, Observed } from "./types.js";

export const HOSTNAME_ID = "hostname";

/**
 * Talos sets the kernel hostname to the short name and the domain separately; a host that stores an
 * FQDN in the hostname is split at the first dot so the spec still reads hostname + domainname.
 */
export function hostnameSpec(hostname: string, domainname: string): HostnameStatusSpec {
  const dot = hostname.indexOf(".");
  if (dot > 0 && !domainname) return { hostname: hostname.slice(0, dot), domainname: hostname.slice(dot + 1) };
  return { hostname, domainname };
}

export async function observeHostname(opts?: { root?: string }): Promise<Observed<HostnameStatusSpec>> {
  const [hostname, domainname] = await Promise.all([readHostname(opts), readDomainname(opts).catch(() => "")]);
  return { id: HOSTNAME_ID, spec: hostnameSpec(hostname, domainname) };
}

/**
 * Calls `onChange` when the kernel's host or domain name changes. The kernel signals it itself: the two
 * sysctl files report an error condition to poll(2) after each change, which libuv sees through
 * koffi.node.poll, so nothing is read until something changed. The kernel signals a change in any UTS
 * namespace (the counter is shared), so the names are compared before `onChange` is called. Under
 * another `root` (tests) the files are plain files and are watched with inotify instead.
 */
export function watchHostname(onChange: () => void, opts?: { root?: string }): () => void {
  const files = ["proc/sys/kernel/hostname", "proc/sys/kernel/domainname"];
  const root = opts?.root ?? "/";
  if (path.resolve(root) !== "/") return watchFiles(files.map((f) => path.join(root, f)), onChange);
  const n = native();
  const read = () => files.map((f) => readFileSync(path.join("/", f), "utf8")).join("\0");
  let last = read();
  const handles: Array<{ fd: number; h?: { start(o: object, cb: (s: number) => void): void; close(): void; unref(): void } }> = [];
  let stopped = false;
  for (const f of files) {
    const fd = openSync(path.join("/", f), "r");
    if (!pollable(fd)) {
      closeSync(fd);
      continue;
    }
    const entry: (typeof handles)[number] = { fd };
    const cb = () => {
      if (stopped) return;
      // libuv stops a handle that reported the error condition; watch for the next change.
      entry.h?.start({ disconnect: true }, cb);
      const now = read();
      if (now === last) return;
      last = now;
      onChange();
    };
    entry.h = n.poll(fd, { disconnect: true }, cb);
    entry.h.unref();
    handles.push(entry);
  }
  if (handles.length === 0) throw new Error("the kernel's hostname files do not support poll(2)");
  return () => {
    stopped = true;
    for (const e of handles) {
      e.h?.close();
      closeSync(e.fd);
    }
  };
}
