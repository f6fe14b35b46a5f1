/**
 * "Tell me when these files may have changed" through inotify (fs.watch on their folders), for state the
 * controllers mirror from files (resolv.conf, the etc files readiness). A folder watch sees a file being
 * created, written, replaced by rename or removed; a symlinked file (resolv.conf → /run/...) is followed
 * to its target's folder too; a folder that does not exist yet is waited for from its nearest existing
 * ancestor. Nothing runs while nothing changes.
 */
import { watch, readlinkSync, statSync, type FSWatcher } from "node:fs";
import path from "node:path";

/** Folder → the child names in it that matter. */
function plan(files: string[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const want = (dir: string, name: string) => {
    let set = out.get(dir);
    if (!set) out.set(dir, (set = new Set()));
    set.add(name);
  };
  const follow = (file: string, depth: number) => {
    // Climb to the nearest existing folder; the next component on the way down is what to wait for.
    let dir = path.dirname(file);
    let name = path.basename(file);
    while (!isDir(dir) && dir !== path.dirname(dir)) {
      name = path.basename(dir);
      dir = path.dirname(dir);
    }
    want(dir, name);
    if (depth < 8 && dir === path.dirname(file)) {
      const target = linkTarget(file);
      if (target) follow(path.resolve(dir, target), depth + 1);
    }
  };
  for (const f of files) follow(path.resolve(f), 0);
  return out;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function linkTarget(p: string): string | undefined {
  try {
    return readlinkSync(p);
  } catch {
    return undefined;
  }
}

/** Calls `onChange` (at most once per event-loop turn) whenever one of `files` may have changed. */
export function watchFiles(files: string[], onChange: () => void): () => void {
  let watchers: FSWatcher[] = [];
  let stopped = false;
  let pending: NodeJS.Immediate | undefined;
  const fire = () => {
    if (stopped || pending) return;
    pending = setImmediate(() => {
      pending = undefined;
      if (stopped) return;
      // The layout may have changed (a folder appeared, a symlink moved): watch the new one.
      arm();
      onChange();
    });
  };
  const arm = () => {
    for (const w of watchers) w.close();
    watchers = [];
    for (const [dir, names] of plan(files)) {
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => {
          if (name === null || names.has(String(name))) fire();
        });
        // The folder itself went away (or the watch broke): look again from the top.
        w.on("error", fire);
        watchers.push(w);
      } catch {
        // Vanished between planning and watching; the parent's watch (if any) or the next event re-arms.
      }
    }
  };
  arm();
  return () => {
    stopped = true;
    if (pending) clearImmediate(pending);
    for (const w of watchers) w.close();
    watchers = [];
  };
}
