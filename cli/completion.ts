import type { Command, Option } from "commander";

/**
 * `redraft completion bash|zsh|fish`: a completion script written from commander's own command
 * tree (its commands, options, and the choices of options and arguments), so that it names exactly
 * what the command line takes and cannot drift from it.
 */

export const COMPLETION_SHELLS = ["bash", "zsh", "fish"] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

/** What a script needs of one option. */
interface OptionSpec {
  /** `--data-dir`, and `-V` when it has a short form. */
  flags: string[];
  description: string;
  /** Whether a value follows it (as a separate word). */
  takesValue: boolean;
  choices: readonly string[];
}

/** What a script needs of one command. */
interface CommandSpec {
  name: string;
  description: string;
  options: OptionSpec[];
  /** Per positional argument: its choices (empty: a path or free text). The last may repeat. */
  args: { choices: readonly string[]; variadic: boolean }[];
}

const optionSpec = (o: Option): OptionSpec => ({
  flags: [o.long, o.short].filter((f): f is string => f !== undefined),
  description: o.description,
  takesValue: o.required || o.optional,
  choices: o.argChoices ?? [],
});

/** Commander's help option, which it adds to every command without listing it in `options`. */
const HELP: OptionSpec = {
  flags: ["--help", "-h"],
  description: "display help",
  takesValue: false,
  choices: [],
};

/** The tree as the scripts use it: the program's options, and each visible command's. */
function specOf(program: Command): { global: OptionSpec[]; commands: CommandSpec[] } {
  return {
    global: [...program.options.filter((o) => !o.hidden).map(optionSpec), HELP],
    commands: program.commands.map((c) => ({
      name: c.name(),
      description: c.description(),
      options: [...c.options.filter((o) => !o.hidden).map(optionSpec), HELP],
      args: c.registeredArguments.map((a) => ({ choices: a.argChoices ?? [], variadic: a.variadic })),
    })),
  };
}

/** The completion script for `shell`, for a program named `program.name()`. */
export function completionScript(program: Command, shell: CompletionShell): string {
  const spec = specOf(program);
  const name = program.name();
  if (shell === "bash") return bashScript(name, spec);
  if (shell === "zsh") return zshScript(name, spec);
  return fishScript(name, spec);
}

type Spec = ReturnType<typeof specOf>;

/** A word a script may hold in single quotes. */
const sq = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
/** A function name: the program's name with anything but letters, digits and `_` made `_`. */
const fn = (name: string) => `_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;

function bashScript(name: string, spec: Spec): string {
  const valued = (options: OptionSpec[]) => options.filter((o) => o.takesValue).flatMap((o) => o.flags);
  const flags = (...options: OptionSpec[][]) =>
    [...new Set(options.flat().flatMap((o) => o.flags))].join(" ");
  const choiceCases = (options: OptionSpec[]) =>
    options
      .filter((o) => o.choices.length > 0)
      .map(
        (o) =>
          `      ${o.flags.join("|")}) COMPREPLY=($(compgen -W ${sq(o.choices.join(" "))} -- "$cur")); return ;;`,
      );
  const perCommand = spec.commands.map((c) => {
    const positional = c.args.map(
      (a, i) =>
        `        ${a.variadic ? `${i}|*` : i}) ${a.choices.length ? `COMPREPLY=($(compgen -W ${sq(a.choices.join(" "))} -- "$cur"))` : ""};;`,
    );
    return [
      `    ${c.name})`,
      `      valued=${sq([...valued(spec.global), ...valued(c.options)].join(" "))}`,
      `      flags=${sq(flags(spec.global, c.options))}`,
      "      case $prev in",
      ...choiceCases([...spec.global, ...c.options]),
      "      esac",
      `      positional_choices() { case $1 in`,
      ...positional,
      "      esac; }",
      "      ;;",
    ].join("\n");
  });
  return `# ${name} completion for bash, written by \`${name} completion bash\` from its command tree.
# Load it with: source <(${name} completion bash)
${fn(name)}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  local commands=${sq(spec.commands.map((c) => c.name).join(" "))}
  local global_valued=${sq(valued(spec.global).join(" "))}
  local cmd="" i word skip=0 count=0
  # The command is the first word that is neither an option nor an option's value.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ -z $cmd ]]; then
      if [[ " $global_valued " == *" $word "* ]]; then skip=1
      elif [[ $word != -* ]]; then cmd=$word; fi
    fi
  done
  if [[ -z $cmd ]]; then
    case $prev in
${choiceCases(spec.global).join("\n")}
    esac
    if [[ " $global_valued " == *" $prev "* ]]; then return; fi
    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W ${sq(flags(spec.global))} -- "$cur"))
    else COMPREPLY=($(compgen -W "$commands" -- "$cur")); fi
    return
  fi
  local valued flags
  case $cmd in
${perCommand.join("\n")}
    *) return ;;
  esac
  if [[ " $valued " == *" $prev "* ]]; then return; fi
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); return; fi
  # Which positional argument is being typed: words after the command, less options and their values.
  local seen=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ " $valued " == *" $word "* ]]; then skip=1; continue; fi
    [[ $word == -* ]] && continue
    if ((seen)); then count=$((count + 1)); elif [[ $word == "$cmd" ]]; then seen=1; fi
  done
  positional_choices "$count"
}
complete -o default -F ${fn(name)} ${name}
`;
}

/** Text inside a zsh `_arguments` spec: its brackets and colons escaped. */
const zq = (text: string) => text.replace(/([[\]:\\])/g, "\\$1").replaceAll("'", "'\\''");

function zshOption(o: OptionSpec): string[] {
  const value = o.takesValue ? `:value:${o.choices.length ? `(${o.choices.join(" ")})` : "_files"}` : "";
  return o.flags.map((flag) => `'${flag}[${zq(o.description)}]${value}'`);
}

function zshScript(name: string, spec: Spec): string {
  const commands = spec.commands.map((c) => `    '${zq(c.name)}:${zq(c.description)}'`);
  const perCommand = spec.commands.map((c) => {
    const args = c.args.map(
      (a, i) =>
        `'${a.variadic ? "*" : String(i + 1)}:arg:${a.choices.length ? `(${a.choices.join(" ")})` : "_files"}'`,
    );
    return `      ${c.name}) _arguments ${[...c.options.flatMap(zshOption), ...args].join(" ")} ;;`;
  });
  return `#compdef ${name}
# ${name} completion for zsh, written by \`${name} completion zsh\` from its command tree.
# Load it with: source <(${name} completion zsh)   (or save it as _${name} in a folder of $fpath)
${fn(name)}() {
  local -a commands
  commands=(
${commands.join("\n")}
  )
  local curcontext=$curcontext state line
  _arguments -C ${spec.global.flatMap(zshOption).join(" ")} '1:command:->command' '*::arg:->args'
  case $state in
    command) _describe command commands ;;
    args)
      case $line[1] in
${perCommand.join("\n")}
      esac ;;
  esac
}
if [[ $zsh_eval_context[-1] == loadautoload ]]; then ${fn(name)} "$@"; else compdef ${fn(name)} ${name}; fi
`;
}

function fishOption(name: string, o: OptionSpec, condition?: string): string {
  const parts = [`complete -c ${name}`];
  if (condition) parts.push(`-n ${sq(condition)}`);
  for (const flag of o.flags)
    parts.push(flag.startsWith("--") ? `-l ${flag.slice(2)}` : `-s ${flag.slice(1)}`);
  if (o.takesValue) parts.push(o.choices.length ? `-x -a ${sq(o.choices.join(" "))}` : "-r -F");
  parts.push(`-d ${sq(o.description)}`);
  return parts.join(" ");
}

function fishScript(name: string, spec: Spec): string {
  const lines = [
    `# ${name} completion for fish, written by \`${name} completion fish\` from its command tree.`,
    `# Load it with: ${name} completion fish | source`,
    `complete -c ${name} -e`,
    ...spec.global.map((o) => fishOption(name, o)),
  ];
  const names = spec.commands.map((c) => c.name).join(" ");
  for (const c of spec.commands) {
    lines.push(
      `complete -c ${name} -f -n ${sq(`not __fish_seen_subcommand_from ${names}`)} -a ${c.name} -d ${sq(c.description)}`,
    );
    const within = `__fish_seen_subcommand_from ${c.name}`;
    for (const o of c.options) lines.push(fishOption(name, o, within));
    const choices = [...new Set(c.args.flatMap((a) => a.choices))];
    if (choices.length) lines.push(`complete -c ${name} -n ${sq(within)} -a ${sq(choices.join(" "))}`);
  }
  return `${lines.join("\n")}\n`;
}
