#!/usr/bin/env node
/** Process entry: PID 1 in the image (`machined init`), otherwise the CLI. */
// first: the SIGUSR1 guard must exist before any other module code runs (signals.ts)
import "./pid1/inspector-guard.js";
import "reflect-metadata";
import { main } from "./cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined && code !== 0) process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
