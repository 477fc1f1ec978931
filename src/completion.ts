/**
 * `fanout completion bash|zsh|fish`: a completion script for that shell. Commands come from help.ts's COMMANDS and
 * flags from config.ts's SETTINGS (each setting's `cli` options), so a new setting or command is completed
 * without touching this file. Flags may stand anywhere (config.ts readArgs), so every script skips flags and
 * their values when it looks for the command word.
 */
import type { TSchema } from "@sinclair/typebox";
import { SETTINGS, type Shell, SHELLS } from "./config.ts";
import { COMMANDS } from "./help.ts";

/** A flag as a completion script sees it. `value`: none, only after `=` (optional), or the next word too. */
export interface Flag { names: string[]; about: string; value: "none" | "optional" | "required"; arg: string; choices: string[]; files: boolean }
interface Word { word: string; about: string; subs: Array<{ word: string; about: string }> }

const META_FLAGS: Flag[] = [
  { names: ["--help", "-h"], about: "print the help", value: "none", arg: "", choices: [], files: false },
  { names: ["--version", "-v"], about: "print the version", value: "none", arg: "", choices: [], files: false },
];

/** Completable values of a setting: the literals of a union, on/off for booleans. */
function choicesOf(schema: TSchema): string[] {
  if (schema.type === "boolean") return ["on", "off"];
  const literals = (schema.anyOf as TSchema[] | undefined)?.map((member) => member.const);
  return literals?.every((literal) => typeof literal === "string") ? literals : [];
}

export function completionFlags(): Flag[] {
  const settings = SETTINGS.map(({ schema, cli }): Flag => {
    const value = cli.noValue ? "none" : cli.bare !== undefined ? "optional" : "required";
    const arg = (cli.arg ?? "").replace(/^[[=<]+|[\]>]+$/g, "");
    return { names: [cli.flag], about: cli.about, value, arg, choices: value === "none" ? [] : choicesOf(schema), files: /file/.test(arg) };
  });
  return [...settings, ...META_FLAGS];
}

/** Top-level command words, each with its subcommands (`orgs create|list`) or, for completion, the shells. */
export function completionWords(): Word[] {
  const words: Word[] = [];
  for (const [usage, about] of COMMANDS) {
    const [word = "", sub] = usage.split(" ");
    let entry = words.find((w) => w.word === word);
    if (!entry) words.push(entry = { word, about, subs: [] });
    if (sub && !sub.startsWith("<")) entry.subs.push({ word: sub, about });
  }
  for (const entry of words) {
    if (entry.subs.length > 1) entry.about = `subcommands: ${entry.subs.map((s) => s.word).join(", ")}`;
  }
  const completion = words.find((w) => w.word === "completion");
  if (completion) completion.subs = SHELLS.map((shell) => ({ word: shell, about: `completion script for ${shell}` }));
  return words;
}

/** Words that take a file as their argument: backup <file>. */
const FILE_COMMANDS = COMMANDS.filter(([usage]) => / <file>$/.test(usage)).map(([usage]) => usage.split(" ")[0]!);

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

function bashScript(): string {
  const flags = completionFlags();
  const words = completionWords();
  const nextWord = flags.filter((f) => f.value === "required").flatMap((f) => f.names).join("|");
  const valueCases = flags.filter((f) => f.files || f.choices.length > 0).map((f) => {
    const reply = f.files ? "-f" : `-W ${quote(f.choices.join(" "))}`;
    return `      ${f.names.join("|")}) _fanout_reply ${reply} -- "$cur";;`;
  });
  const commandCases = words.filter((w) => w.subs.length > 0 || FILE_COMMANDS.includes(w.word)).map((w) => {
    const reply = w.subs.length > 0 ? `-W ${quote(w.subs.map((s) => s.word).join(" "))}` : "-f";
    return `    ${w.word}) (( \${#words[@]} == 1 )) && _fanout_reply ${reply} -- "$cur";;`;
  });
  return `# fanout completion for bash. Load it from ~/.bashrc:  source <(fanout completion bash)
# or install it:  fanout completion bash > /etc/bash_completion.d/fanout

# COMPREPLY from compgen, one candidate per line, so file names with spaces stay whole (bash 3.2 has no mapfile).
_fanout_reply() {
  local line
  COMPREPLY=()
  while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen "$@")
  [[ $1 == -f ]] && compopt -o filenames 2>/dev/null
  return 0
}

_fanout() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev= flag= ended= i=1
  local -a words=()
  COMPREPLY=()
  (( COMP_CWORD > 0 )) && prev=\${COMP_WORDS[COMP_CWORD-1]}
  # bash splits --flag=value into three words: --flag, =, value.
  if [[ $cur == = ]]; then flag=$prev cur=
  elif [[ $prev == = ]] && (( COMP_CWORD > 1 )); then flag=\${COMP_WORDS[COMP_CWORD-2]}
  else
    case $prev in ${nextWord}) flag=$prev;; esac
  fi
  if [[ -n $flag ]]; then
    case $flag in
${valueCases.join("\n")}
    esac
    return 0
  fi
  # The command words so far, without flags and their values.
  while (( i < COMP_CWORD )); do
    if [[ -n $ended ]]; then words+=("\${COMP_WORDS[i]}")
    else
      case \${COMP_WORDS[i]} in
        --) ended=1;;
        ${nextWord}) [[ \${COMP_WORDS[i+1]} == = ]] && (( i++ )); (( i++ ));;
        =) (( i++ ));;
        -*) ;;
        *) words+=("\${COMP_WORDS[i]}");;
      esac
    fi
    (( i++ ))
  done
  if [[ -z $ended && $cur == -* ]]; then
    _fanout_reply -W ${quote(flags.flatMap((f) => f.names).join(" "))} -- "$cur"
    return 0
  fi
  case \${words[0]-} in
    "") _fanout_reply -W ${quote(words.map((w) => w.word).join(" "))} -- "$cur";;
${commandCases.join("\n")}
  esac
  return 0
}

complete -F _fanout fanout
`;
}

/** Text inside an _arguments `[explanation]` or a `name:description` pair, inside single quotes. */
const zshText = (text: string) => text.replace(/\\/g, "\\\\").replace(/([\][:])/g, "\\$1").replace(/'/g, `'\\''`);

function zshFlagSpec(flag: Flag): string {
  const action = flag.files ? "_files" : flag.choices.length > 0 ? `(${flag.choices.join(" ")})` : " ";
  const value = `:${zshText(flag.arg)}:${action}`;
  if (flag.names.length > 1) return `'(- *)'{${flag.names.join(",")}}'[${zshText(flag.about)}]'`;
  const [name] = flag.names;
  if (flag.value === "none") return `'${name}[${zshText(flag.about)}]'`;
  if (flag.value === "optional") return `'${name}=-[${zshText(flag.about)}]:${value}'`;
  return `'${name}=[${zshText(flag.about)}]${value}'`;
}

function zshScript(): string {
  const words = completionWords();
  const pairs = (list: Array<{ word: string; about: string }>) => list.map((w) => `'${w.word}:${zshText(w.about)}'`).join(" ");
  const cases = words.filter((w) => w.subs.length > 0 || FILE_COMMANDS.includes(w.word)).map((w) => {
    const spec = w.subs.length > 0 ? `'1: :->sub' && return` : `'1:file:_files' && return`;
    const subs = w.subs.length > 0 ? `\n      [[ $state == sub ]] && subs=(${pairs(w.subs)}) && _describe -t commands '${w.word}' subs` : "";
    return `    ${w.word})\n      _arguments -S $flags ${spec}${subs};;`;
  });
  return `#compdef fanout
# fanout completion for zsh. Load it from ~/.zshrc (after compinit):  source <(fanout completion zsh)
# or install it as _fanout in a directory of $fpath:  fanout completion zsh > "\${fpath[1]}/_fanout"

_fanout() {
  local curcontext=$curcontext state line
  local -a flags commands subs
  flags=(
    ${completionFlags().map(zshFlagSpec).join("\n    ")}
  )
  commands=(${pairs(words)})
  _arguments -C -S $flags '1: :->command' '*:: :->argument' && return
  if [[ $state == command ]]; then
    _describe -t commands 'fanout command' commands
    return
  fi
  case $words[1] in
${cases.join("\n")}
    *) _arguments -S $flags;;
  esac
}

if [[ $funcstack[1] == _fanout ]]; then _fanout "$@"; else compdef _fanout fanout; fi
`;
}

function fishScript(): string {
  const words = completionWords();
  const top = `not __fish_seen_subcommand_from ${words.map((w) => w.word).join(" ")}`;
  const lines = words.map((w) => `complete -c fanout -n ${quote(top)} -a ${w.word} -d ${quote(w.about)}`);
  for (const w of words) {
    const inside = `__fish_seen_subcommand_from ${w.word}`;
    const fresh = `${inside}; and not __fish_seen_subcommand_from ${w.subs.map((s) => s.word).join(" ")}`;
    for (const sub of w.subs) lines.push(`complete -c fanout -n ${quote(fresh)} -a ${sub.word} -d ${quote(sub.about)}`);
    if (FILE_COMMANDS.includes(w.word)) lines.push(`complete -c fanout -n ${quote(inside)} -F`);
  }
  for (const flag of completionFlags()) {
    const names = flag.names.map((n) => (n.startsWith("--") ? `-l ${n.slice(2)}` : `-s ${n.slice(1)}`)).join(" ");
    const takes = flag.value !== "required" ? "" : flag.files ? " -r -F" : " -x";
    const choices = flag.choices.length > 0 ? ` -a ${quote(flag.choices.join(" "))}` : "";
    lines.push(`complete -c fanout ${names}${takes}${choices} -d ${quote(flag.about)}`);
  }
  return `# fanout completion for fish:  fanout completion fish > ~/.config/fish/completions/fanout.fish
# (or for the current shell only:  fanout completion fish | source)
complete -c fanout -f
${lines.join("\n")}
`;
}

const SCRIPTS: Record<Shell, () => string> = { bash: bashScript, zsh: zshScript, fish: fishScript };

export function completionScript(shell: Shell): string {
  return SCRIPTS[shell]();
}
