/**
 * Collects validation problems. Errors and warnings are plain strings that start with the YAML path they are about.
 */
export class Report {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];

  error(path: string, text: string): void {
    this.errors.push(path === "" ? text : `${path}: ${text}`);
  }

  warn(path: string, text: string): void {
    this.warnings.push(path === "" ? text : `${path}: ${text}`);
  }
}

export type ValidationMode = "metal" | "container" | "local";

export interface ValidateOptions {
  /** metal: installs to a disk; container: no install; local: a plain process whose "disk" may be an image file. */
  mode: ValidationMode;
  /** Report warnings as errors (talosctl validate --strict). */
  strict?: boolean;
  /** The node's clock, for certificate validity (admission.ts); default now. */
  now?: Date;
}
