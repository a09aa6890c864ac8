import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { BIN, ROOT, redraft } from "../helpers/run-cli.js";

const exec = promisify(execFile);

/** The commands and their long options as `--help` lists them: what every script must name. */
async function helpTree(): Promise<Map<string, string[]>> {
  const longs = (help: string) => [...help.matchAll(/^\s+(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1] ?? "");
  const top = (await redraft(["--help"])).stdout;
  const names = [...top.slice(top.indexOf("Commands:")).matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1] ?? "");
  const tree = new Map([["", longs(top.slice(0, top.indexOf("Commands:")))]]);
  for (const name of names.filter((n) => n !== "help"))
    tree.set(name, longs((await redraft([name, "--help"])).stdout));
  return tree;
}

describe("redraft --version", () => {
  it("prints package.json's version, exit 0", async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    for (const flag of ["--version", "-V"]) {
      const out = await redraft([flag]);
      expect(out).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
    }
  });
});

describe("redraft completion", () => {
  it("bash: the script loads in bash and registers a completion for redraft", async () => {
    const { stdout } = await exec("bash", [
      "-c",
      `source <(node ${BIN} completion bash) && complete -p redraft`,
    ]);
    expect(stdout.trim()).toBe("complete -o default -F _redraft redraft");
  }, 60_000);

  it("bash: completes commands, options, and the choices of options and arguments", async () => {
    const script = (await redraft(["completion", "bash"])).stdout;
    const complete = async (...words: string[]) => {
      const line = `COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _redraft; echo "\${COMPREPLY[*]}"`;
      return (await exec("bash", ["-c", `${script}\n${line}`])).stdout.trim().split(" ");
    };
    expect(await complete("redraft", "ru")).toEqual(["run", "runs"]);
    expect(await complete("redraft", "--data-dir", "d", "sh")).toEqual(["show"]);
    expect(await complete("redraft", "runs", "--status", "")).toContain("needs_manual_review");
    expect(await complete("redraft", "runs", "--li")).toEqual(["--limit"]);
    expect(await complete("redraft", "review", "3f2c9a1e", "")).toEqual([
      "approve",
      "reject",
      "edit",
      "undo",
    ]);
    expect(await complete("redraft", "review", "--note", "why", "3f2c9a1e", "a")).toEqual(["approve"]);
    expect(await complete("redraft", "completion", "")).toEqual(["bash", "zsh", "fish"]);
  }, 60_000);

  it("names every command and option of --help in each shell's script", async () => {
    const tree = await helpTree();
    expect(tree.get("runs")).toContain("--status");
    expect(tree.size).toBeGreaterThan(10);
    for (const shell of ["bash", "zsh", "fish"]) {
      const { code, stdout } = await redraft(["completion", shell]);
      expect(code).toBe(0);
      for (const [command, options] of tree) {
        if (command) expect(stdout, `${shell}: ${command}`).toMatch(new RegExp(`\\b${command}\\b`));
        for (const option of options)
          expect(stdout, `${shell}: ${command} ${option}`).toContain(
            shell === "fish" ? `-l ${option.slice(2)}` : option,
          );
      }
    }
  });

  it("fish and zsh: options with choices offer them", async () => {
    const fish = (await redraft(["completion", "fish"])).stdout;
    expect(fish).toContain(
      "complete -c redraft -n '__fish_seen_subcommand_from runs' -l status -x -a 'draft correcting validated needs_manual_review rejected failed'",
    );
    const zsh = (await redraft(["completion", "zsh"])).stdout;
    expect(zsh).toMatch(/^#compdef redraft$/m);
    expect(zsh).toContain("'--pricing[");
    expect(zsh).toContain(":value:(on_demand batch)'");
  });

  it("refuses another shell in one line, exit 2", async () => {
    const out = await redraft(["completion", "powershell"]);
    expect(out.code).toBe(2);
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
    expect(out.stderr).toMatch(/bash, zsh, fish/);
  });
});
