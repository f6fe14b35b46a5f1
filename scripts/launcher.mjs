#!/usr/bin/env node
// machined: starts the agent bundle (machined.cjs, next to this file) through vm.Script so that V8 can skip
// compiling it: `machined.cjs.cache` (written by `npm run build` from a warm-up start) holds the bytecode of
// everything a start-up runs. Without the cache, or with one V8 rejects (another node build or V8 flags),
// the bundle compiles as usual. Built into dist/machined.mjs by scripts/build.mjs; see docs/performance.md.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const self = fileURLToPath(import.meta.url);
const file = join(dirname(self), "machined.cjs");
const cacheFile = `${file}.cache`;
// The wrapper goes where the bundle's `#!` line was, so line numbers (and the source map) stay right.
const source = `(function (exports, require, module, __filename, __dirname, __machined_url) {${readFileSync(file, "latin1").replace(/^#!.*/, "")}\n})`;
let cachedData;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  // no cache: compile as usual
}
const script = new vm.Script(source, {
  filename: file,
  cachedData,
  importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
cachedData = undefined;
if (process.env.MACHINED_CODE_CACHE_DEBUG) {
  process.stderr.write(`machined code cache: ${script.cachedDataRejected === undefined ? "none" : script.cachedDataRejected ? "rejected" : "accepted"}\n`);
}
// `npm run build` asks a warm-up run to write the cache once start-up is done (atomically: a reader never
// sees half a file).
const out = process.env.MACHINED_WRITE_CODE_CACHE;
if (out) {
  setTimeout(() => {
    writeFileSync(`${out}.tmp`, script.createCachedData());
    renameSync(`${out}.tmp`, out);
  }, Number(process.env.MACHINED_WRITE_CODE_CACHE_AFTER_MS ?? 2000)).unref();
}
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file), import.meta.url);
