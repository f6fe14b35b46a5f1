/** Argument parsing shared by the subcommands: one clear line on stderr and a non-zero exit on misuse. */
import { parseArgs, type ParseArgsConfig } from "node:util";

export class UsageError extends Error {}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig["options"]>;
  /** Exact number of positionals, or [min, max]. */
  positionals: number | [number, number];
  run(values: Record<string, unknown>, positionals: string[]): Promise<number | void>;
}

export function parse(cmd: Command, argv: string[]): { values: Record<string, unknown>; positionals: string[] } | "help" {
  if (argv.includes("--help") || argv.includes("-h")) return "help";
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: cmd.options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${cmd.name}: ${(err as Error).message.split("\n")[0]}`);
  }
  const [min, max] = typeof cmd.positionals === "number" ? [cmd.positionals, cmd.positionals] : cmd.positionals;
  const n = parsed.positionals.length;
  if (n < min || n > max) {
    const want = min === max ? `${min}` : `${min} to ${max}`;
    throw new UsageError(`${cmd.name}: expected ${want} argument(s), got ${n} (usage: ${cmd.usage})`);
  }
  return { values: parsed.values as Record<string, unknown>, positionals: parsed.positionals };
}

export function helpText(cmd: Command): string {
  const lines = [`${cmd.summary}`, "", `Usage: ${cmd.usage}`, ""];
  const opts = Object.entries(cmd.options);
  if (opts.length) {
    lines.push("Options:");
    for (const [name, o] of opts) {
      const short = o.short ? `-${o.short}, ` : "    ";
      const val = o.type === "string" ? " VALUE" : "";
      lines.push(`  ${short}--${name}${val}${o.multiple ? " (repeatable)" : ""}`);
    }
  }
  return lines.join("\n");
}
