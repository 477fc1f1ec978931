/**
 * Entry point: argv → configuration → command. Exit codes: 0 success, 1 failure at run time,
 * 2 invalid configuration (one clear line on stderr).
 */
import { ConfigError, loadConfig } from "./config.ts";
import { HELP_TEXT } from "./help.ts";
import { runServe } from "./serve.ts";
import { runCommand } from "./commands.ts";
import { fullVersion } from "./version.ts";
import { DatabaseUnreachable } from "./store/postgres/client.ts";
import { DatabaseTooNew } from "./store/newer-database.ts";
import { completionScript } from "./completion.ts";

async function main(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  try {
    const { command, config } = loadConfig(env, argv);
    if (command.name === "help") return console.log(HELP_TEXT), 0;
    if (command.name === "version") return console.log(`fanout ${fullVersion()}`), 0;
    if (command.name === "completion") return console.log(completionScript(command.shell).trimEnd()), 0;
    if (command.name === "serve") return await runServe(config);
    return await runCommand(command, config, { out: (line) => console.log(line) });
  } catch (e) {
    // A database named by --db that cannot be used at start (unreachable, or migrated by a newer fanout) is a
    // configuration to fix, like a malformed one: restarting cannot help.
    if (e instanceof ConfigError || e instanceof DatabaseUnreachable || e instanceof DatabaseTooNew) {
      console.error(`fanout: ${e.message}`);
      return 2;
    }
    console.error(`fanout: ${(e as Error)?.message ?? e}`);
    return 1;
  }
}

process.exit(await main(process.argv.slice(2), process.env));
