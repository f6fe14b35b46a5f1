/**
 * ApplyConfiguration semantics (Talos ≥ 1.13): parse, validate, then AUTO/NO_REBOOT/TRY apply live,
 * STAGED waits for the next reboot, TRY reverts after its timeout unless another apply arrives, and a
 * dry run only reports. One apply at a time.
 *
 * All or nothing: every check runs before anything is stored or activated — size, encoding and YAML bounds
 * (loadConfig), schema, semantic validation and admission (validateConfig: the OS CA, its key and the SANs the
 * API identity is built from, so an accepted config cannot lock the node out), and the change impact. A refused
 * apply is an InvalidArgument whose message names the YAML path and is bounded in length (it travels in a gRPC
 * trailer), and leaves the stored config byte-identical.
 */
import { ApiError, Code, failedPrecondition, invalidArgument, permissionDenied, unimplemented } from "../machinery/errors.js";
import { ApplyConfigurationRequest_Mode as Mode } from "../machinery/api/gen/machine/machine_pb.js";
import { loadConfig, type MachineConfig } from "../machinery/config/index.js";
import { validateConfig } from "../machinery/config/validate.js";
import { boundText } from "../machinery/config/limits.js";
import { diffConfigs } from "../machinery/config/diff.js";
import { changeImpact } from "../machinery/config/impact.js";

export interface ApplyRequest {
  data: Uint8Array;
  mode: Mode;
  dryRun: boolean;
  tryTimeoutMs?: number;
  isAdmin: boolean;
}

export interface ApplyResult {
  mode: Mode;
  modeDetails: string;
  warnings: string[];
}

/** What the apply logic needs from the node; implemented by Node. */
export interface ApplyTarget {
  readonly maintenance: boolean;
  readonly validationMode: "metal" | "container" | "local";
  activeConfig(): MachineConfig | undefined;
  /** Persist (and activate unless staged). */
  commit(cfg: MachineConfig, how: "live" | "staged" | "try"): Promise<void>;
  /** Arm (or cancel with undefined) the automatic revert of a TRY apply. */
  armTryRevert(timeoutMs: number | undefined): void;
}

const DEFAULT_TRY_MS = 60_000;

export class ConfigApplier {
  private busy = false;

  constructor(private readonly target: ApplyTarget) {}

  async apply(req: ApplyRequest): Promise<ApplyResult> {
    if (this.busy) throw failedPrecondition("another apply configuration is already in progress");
    this.busy = true;
    try {
      return await this.run(req);
    } finally {
      this.busy = false;
    }
  }

  private async run(req: ApplyRequest): Promise<ApplyResult> {
    const t = this.target;
    if (!t.maintenance && !req.isAdmin) throw permissionDenied();
    let mode = req.mode;
    if (mode !== Mode.TRY) t.armTryRevert(undefined);

    let cfg: MachineConfig;
    try {
      cfg = loadConfig(req.data);
    } catch (err) {
      throw refused(err);
    }
    if (!cfg.v1alpha1()) {
      if (!t.maintenance) {
        throw invalidArgument(
          "the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?",
        );
      }
      throw invalidArgument("the machine configuration doesn't contain v1alpha1 config: machine and cluster sections are required");
    }
    if (mode === Mode.REBOOT) {
      if (!t.maintenance) throw unimplemented("the REBOOT mode is not supported, please use AUTO or NO_REBOOT modes instead");
      mode = Mode.NO_REBOOT;
    }

    let warnings: string[];
    try {
      warnings = [...cfg.warnings, ...validateConfig(cfg, { mode: t.validationMode }).warnings];
    } catch (err) {
      throw refused(err);
    }

    const previous = t.activeConfig();
    let details: string;
    switch (mode) {
      case Mode.AUTO:
        mode = Mode.NO_REBOOT;
        details = "Applied configuration without a reboot";
        break;
      case Mode.NO_REBOOT:
      case Mode.TRY:
        details = "Applied configuration without a reboot";
        break;
      case Mode.STAGED:
        details = "Staged configuration to be applied after the next reboot";
        break;
      default:
        throw new ApiError(Code.InvalidArgument, `incorrect mode '${Mode[mode] ?? mode}' specified for the apply config call`);
    }

    // Per-field decision: a change the running node cannot take live is reported, and takes effect at reboot.
    let impact: ReturnType<typeof changeImpact> | undefined;
    try {
      impact = previous ? changeImpact(previous, cfg) : undefined;
    } catch (err) {
      throw refused(err);
    }
    const rebootNote =
      mode !== Mode.STAGED && impact && impact.rebootRequired.length > 0
        ? `\nChanges that take effect after the next reboot: ${listSome(impact.rebootRequired)}`
        : "";

    if (req.dryRun) {
      const diff = diffConfigs(previous ? new TextDecoder().decode(previous.encode()) : "", new TextDecoder().decode(cfg.encode()));
      return {
        mode,
        warnings: [],
        modeDetails: `Dry run summary:\n${details}${rebootNote} (skipped in dry-run).\nConfig diff:\n\n${diff}`,
      };
    }

    if (mode === Mode.TRY) {
      const timeout = req.tryTimeoutMs && req.tryTimeoutMs > 0 ? req.tryTimeoutMs : DEFAULT_TRY_MS;
      details += `\nThe config is applied in 'try' mode and will be automatically reverted back in ${formatGoDuration(timeout)}`;
      await t.commit(cfg, "try");
      t.armTryRevert(timeout);
    } else {
      await t.commit(cfg, mode === Mode.STAGED ? "staged" : "live");
    }
    return { mode, warnings, modeDetails: details + rebootNote };
  }
}

/** A refusal: InvalidArgument with the (bounded) message of what was wrong, which starts with its YAML path. */
function refused(err: unknown): ApiError {
  return invalidArgument(boundText(err instanceof Error ? err.message : String(err)));
}

/** The first paths of a list and how many more, so a reply never grows with the size of the config. */
function listSome(paths: string[], max = 20): string {
  const shown = paths.slice(0, max).join(", ");
  return paths.length > max ? `${shown} and ${paths.length - max} more` : shown;
}

/** Go's time.Duration.String() for whole milliseconds: "1m0s", "30s", "1h2m3s", "500ms". */
export function formatGoDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let s = ms / 1000;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const sec = Number.isInteger(s) ? `${s}s` : `${s.toFixed(3).replace(/0+$/, "")}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}
