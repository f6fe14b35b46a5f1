/**
 * Errors of the config layer. Each problem carries the YAML path it is about (`machine.network.interfaces[0].mtu`),
 * so the API can hand the message to talosctl unchanged and tests can assert on it.
 */
import { boundedList } from "./limits.js";

/** One problem found in a config: where (YAML path, optional source position) and what. */
export interface ConfigIssue {
  /** YAML path such as `machine.network.interfaces[0].addresses[1]`; "" for the whole input. */
  path: string;
  /** Full message, already prefixed with the path when there is one. */
  message: string;
  /** 1-based source line and column, when the problem could be located in the input text. */
  line?: number;
  column?: number;
}

/** A config could not be loaded (malformed YAML, wrong types, unknown keys, unknown version ...). */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];

  constructor(issues: ConfigIssue[] | string, path = "") {
    const list = typeof issues === "string" ? [{ path, message: issues }] : issues;
    // The message is bounded (first problems, then "and N more"): it travels in a gRPC trailer. `issues` has them all.
    super(boundedList(list.map((i) => i.message)));
    this.name = "ConfigError";
    this.issues = list;
  }

  /** Path of the first problem (the one most callers report). */
  get path(): string {
    return this.issues[0]?.path ?? "";
  }

  get line(): number | undefined {
    return this.issues[0]?.line;
  }

  get column(): number | undefined {
    return this.issues[0]?.column;
  }
}

/** A config loaded but failed semantic validation; the message lists the problems (bounded), `problems` all of them. */
export class ConfigValidationError extends Error {
  constructor(readonly problems: string[]) {
    super(boundedList(problems));
    this.name = "ConfigValidationError";
  }
}

/** Builds a ConfigIssue whose message is `path: text` (or just `text` at the root). */
export function issueAt(path: string, text: string): ConfigIssue {
  return { path, message: path === "" ? text : `${path}: ${text}` };
}
