/** `machined` command line: dispatches to one subcommand per file. */
import { helpText, parse, UsageError, type Command } from "./args.js";
import { startCommand } from "./start.js";
import { initCommand } from "./init.js";
import { genConfigCommand, genSecretsCommand } from "./gen.js";
import { configPatchCommand, configValidateCommand } from "./config.js";

const commands: Record<string, Command> = {
  start: startCommand,
  init: initCommand,
  "gen config": genConfigCommand,
  "gen secrets": genSecretsCommand,
  "config validate": configValidateCommand,
  "config patch": configPatchCommand,
};

function topHelp(): string {
  const rows = Object.values(commands).map((c) => `  ${c.name.padEnd(18)} ${c.summary}`);
  return ["machined: node agent speaking the Talos API", "", "Commands:", ...rows, "", "Run `machined <command> --help` for details."].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    console.log(topHelp());
    return argv.length === 0 ? 2 : 0;
  }
  const two = `${argv[0]} ${argv[1] ?? ""}`;
  const [key, rest] = commands[two] ? [two, argv.slice(2)] : [argv[0], argv.slice(1)];
  const cmd = commands[key];
  if (!cmd) {
    const group = Object.keys(commands).filter((k) => k.startsWith(`${argv[0]} `));
    const hint = group.length ? ` (did you mean: ${group.join(", ")})` : "";
    console.error(`machined: unknown command "${argv.slice(0, 2).join(" ")}"${hint}; run machined --help`);
    return 2;
  }
  try {
    const parsed = parse(cmd, rest);
    if (parsed === "help") {
      console.log(helpText(cmd));
      return 0;
    }
    return (await cmd.run(parsed.values, parsed.positionals)) ?? 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`machined ${err.message}`);
      return 2;
    }
    console.error(`machined ${cmd.name}: ${(err as Error).message}`);
    return 1;
  }
}
