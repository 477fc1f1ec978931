/**
 * What `fanout help` prints: every command with its line, and every setting with its flag, variable, default and
 * meaning, read off config.ts's settings so a new setting is listed without touching this file.
 */
import { SETTINGS, SHELL_LIST } from "./config.ts";

/** Usage and help line of every command; completion.ts completes the same words. */
export const COMMANDS = [
  ["serve", "run the API and the delivery worker (the default)"],
  ["migrate", "apply database migrations and exit"],
  ["orgs create <name>", "create an organization (reverse-DNS name); prints its id and owner key"],
  ["orgs list", "list organizations"],
  ["backup <file>", "write an online copy of the database to <file>"],
  ["compact", "give the space of deleted messages back to the file system (the server stopped)"],
  ["completion <shell>", `print a completion script for ${SHELL_LIST}`],
  ["version", "print the version and the commit it was built from (also --version, -v)"],
  ["help", "print this text (also --help, -h)"],
] as const;

export const HELP_TEXT = [
  "Usage: fanout [command] [flags]",
  "",
  "Commands:",
  ...COMMANDS.map(([usage, about]) => `  ${usage!.padEnd(22)}${about}`),
  "",
  "Flags (a flag wins over its environment variable; flags may come before or after the command):",
  ...SETTINGS.map(({ cli }) => {
    const flag = cli.arg ? `${cli.flag} ${cli.arg}` : cli.flag;
    const shown = cli.default || cli.unset;
    return `  ${flag.padEnd(38)}${cli.env.padEnd(30)}default: ${shown}\n      ${cli.about}`;
  }),
  "",
  "Durations are written 250ms, 5s, 2m, 1h or 30d (whole numbers). Booleans: on|off, true|false, 1|0.",
  "Shell completion: source <(fanout completion bash) in ~/.bashrc, likewise for zsh; fanout completion fish | source.",
  "",
].join("\n");

