/**
 * Errors of the config layer. Each problem carries the YAML path it is about (`machine.network.interfaces[0].mtu`),
 * so the API can hand the message to talosctl unchanged and tests can assert on it.
 */

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
    super(list.map((i) => i.message).join("\n"));
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

/** A config loaded but failed semantic validation; the message lists every problem, one per line. */
export class ConfigValidationError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
    this.name = "ConfigValidationError";
  }
}

/** Builds a ConfigIssue whose message is `path: text` (or just `text` at the root). */
export function issueAt(path: string, text: string): ConfigIssue {
  return { path, message: path === "" ? text : `${path}: ${text}` };
}
