#!/usr/bin/env node
/** Process entry: PID 1 in the image (`machined init`), otherwise the CLI. */
import "reflect-metadata";
import { main } from "../cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined && code !== 0) process.exitCode = code;
  },
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
