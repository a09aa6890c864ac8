import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type * as z from "zod";
import { UsageError } from "../app/inputs.js";
import { readRegularFile } from "../app/regular-file.js";
import { decodeText } from "../app/text-encoding.js";
import { InvalidPackError } from "../shared/errors.js";
import { type AnyPack, type DeploymentConfig, DeploymentConfigSchema } from "../shared/pack.js";
import { loadPackFile } from "../shared/packs/declarative.js";
import { PackRegistry } from "../shared/registry.js";
import { installRoot } from "./install-root.js";

/**
 * What a thrown value says, read without trusting it: a pack module may throw a string, `undefined`,
 * a Proxy whose every trap throws, an error whose `message` is a getter that throws. One line, short.
 */
function describeThrown(value: unknown): string {
  let text: string;
  try {
    if (typeof value === "string") text = value === "" ? "an empty string was thrown" : value;
    else if (value === null || value === undefined) text = `${String(value)} was thrown`;
    else if (typeof value !== "object" && typeof value !== "function")
      text = `the ${typeof value} ${String(value)} was thrown`;
    else {
      let message: unknown;
      try {
        message = (value as { message?: unknown }).message;
      } catch {
        message = undefined;
      }
      text =
        typeof message === "string" && message !== "" ? message : "a value that is not an error was thrown";
    }
  } catch {
    text = "a value that cannot be read was thrown";
  }
  // One line, and plain: a loader's message may carry a terminal's colours (esbuild's, under tsx).
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is what is removed
  const line = text.replace(/\u001b\[[0-9;]*m/g, "").replace(/\s*\n\s*/g, " ");
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/** Reads one property of a module's export, a failure (a throwing getter or trap) said in one line. */
function readField(value: object, name: string): unknown {
  try {
    return (value as Record<string, unknown>)[name];
  } catch (error) {
    throw new InvalidPackError(`its ${name} cannot be read: ${describeThrown(error)}`, { cause: error });
  }
}

const PACK_DATA = [
  "description",
  "contentSchema",
  "settings",
  "settingsSchema",
  "loop",
  "judge",
  "instructions",
  "protectedContent",
] as const;
const PACK_METHODS = ["repair", "scoreUnits", "score", "contentJsonSchema", "ready"] as const;

/**
 * A module's export as a pack, or undefined when it is none (no string `kind`, no `rules` array).
 * Copied into plain objects, each field read once, methods bound to the object they came from: a
 * Proxy or a getter of the module is met here, where its failure is one line naming the pack, and
 * never again by the registry or a run.
 */
function packOf(value: unknown): AnyPack | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const kind = readField(value, "kind");
  const rules = readField(value, "rules");
  let list: unknown[];
  try {
    if (typeof kind !== "string" || !Array.isArray(rules)) return undefined;
    list = Array.from(rules as unknown[]);
  } catch (error) {
    throw new InvalidPackError(`its rules cannot be read: ${describeThrown(error)}`, { cause: error });
  }
  const copy: Record<string, unknown> = { kind };
  for (const name of PACK_DATA) {
    const field = readField(value, name);
    if (field !== undefined) copy[name] = field;
  }
  for (const name of PACK_METHODS) {
    const method = readField(value, name);
    if (method === undefined) continue;
    copy[name] = typeof method === "function" ? (...args: unknown[]) => method.apply(value, args) : method;
  }
  copy.rules = list.map((rule, i) => {
    if (rule === null || typeof rule !== "object") return rule;
    const plain: Record<string, unknown> = {};
    for (const name of ["id", "description", "severity", "source", "check", "repair"]) {
      let field: unknown;
      try {
        field = (rule as Record<string, unknown>)[name];
      } catch (error) {
        throw new InvalidPackError(`its rules[${i}].${name} cannot be read: ${describeThrown(error)}`, {
          cause: error,
        });
      }
      if (field === undefined) continue;
      plain[name] = typeof field === "function" ? (...args: unknown[]) => field.apply(rule, args) : field;
    }
    return plain;
  });
  return copy as unknown as AnyPack;
}

/**
 * Imports a pack module. The command line compiled to dist/ runs without tsx, so a TypeScript pack
 * that Node cannot load brings tsx in, once, when it is first needed.
 */
async function importPackModule(href: string): Promise<unknown> {
  try {
    return await importSettled(href);
  } catch (error) {
    // Whatever the module threw is read with care: it may be undefined, or a Proxy whose traps throw.
    let code: unknown;
    try {
      code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
    } catch {
      code = undefined;
    }
    if (code !== "ERR_UNKNOWN_FILE_EXTENSION") throw error;
    const { register } = await import("tsx/esm/api");
    register();
    // Node remembers the failed load of `href`: the same file under another URL loads afresh.
    return await importSettled(`${href}?tsx`);
  }
}

/**
 * `import(href)`, refused when the module's top-level await waits for something that can never come
 * (`await new Promise(() => {})`): the packs load before anything else keeps the event loop busy, so
 * the loop empties, and Node would exit 13 with a multi-line warning about redraft's own entry point.
 * `beforeExit` comes first; the import is refused there, in one line, and the command goes on to say so.
 */
async function importSettled(href: string): Promise<unknown> {
  let onIdle = () => {};
  const idle = new Promise<never>((_, reject) => {
    onIdle = () =>
      reject(new Error("its top-level await never settles: nothing is left that could settle it"));
  });
  // One listener for all the imports under way (a process importing many packs at once would pass
  // Node's limit of ten listeners and print a warning, a second line of stderr).
  if (idleImports.size === 0) process.on("beforeExit", refuseIdleImports);
  idleImports.add(onIdle);
  try {
    return await Promise.race([import(href), idle]);
  } finally {
    idleImports.delete(onIdle);
    if (idleImports.size === 0) process.off("beforeExit", refuseIdleImports);
  }
}

/** The imports under way, each refused when the event loop empties while it waits (importSettled). */
const idleImports = new Set<() => void>();

function refuseIdleImports(): void {
  for (const refuse of idleImports) refuse();
}

/** redraft's own code: a path into one of these is redraft's business, not the pack author's. */
const OWN_FOLDERS = "cli|dist|shared|local|functions|infra|ui|node_modules";

/**
 * A loader's message without the places inside redraft's own install it names (Node says which
 * module imported a missing one: redraft's loader, which is no business of the pack's author).
 */
export function withoutInstallPaths(message: string): string {
  const root = installRoot();
  const places = [pathToFileURL(root).href, root];
  let text = message;
  for (const place of places) {
    const escaped = place.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    text = text
      .replace(new RegExp(` imported from ${escaped}\\S*`, "g"), "")
      .replace(new RegExp(`${escaped}/(${OWN_FOLDERS})/[^\\s'"]*`, "g"), "(inside redraft)");
  }
  return text;
}

/**
 * A pack module's bytes are checked before Node loads it: Node reads a module as UTF-8, so a Latin-1
 * module would load with U+FFFD in its strings and patterns, and a UTF-16 one fails as a syntax error
 * that does not say why. Only the named file is checked; the files it imports are Node's to read.
 */
async function checkModuleText(file: string): Promise<void> {
  let bytes: Buffer;
  try {
    // Only a regular file is read: a FIFO would hold the command for ever, before and in the import.
    if (!(await stat(file)).isFile())
      throw new InvalidPackError(`pack module ${file} is not a regular file; a pack module must be one`);
    bytes = await readFile(file);
  } catch (error) {
    if (error instanceof InvalidPackError) throw error;
    return; // The import says what is wrong with the path, as it always has.
  }
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new InvalidPackError(`pack module ${file} ${decoded.problem}`);
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
    throw new InvalidPackError(
      `pack module ${file} is UTF-16 text (its byte-order mark says so), and Node loads a module only as UTF-8; save it as UTF-8`,
    );
}

async function readPacks(file: string): Promise<AnyPack[]> {
  if (!/\.(ts|mts|js|mjs)$/.test(file)) return [await loadPackFile(file)];
  await checkModuleText(file);
  let module: Record<string, unknown>;
  try {
    module = (await importPackModule(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new InvalidPackError(
      `pack module ${file} cannot be loaded: ${withoutInstallPaths(describeThrown(error))}`,
      { cause: error },
    );
  }
  const packs: AnyPack[] = [];
  for (const name of Object.keys(module)) {
    let value: unknown;
    try {
      value = module[name];
    } catch (error) {
      // An export read before its module set it (a cycle), or a namespace that throws.
      throw new InvalidPackError(
        `pack module ${file}: its export ${name} cannot be read: ${describeThrown(error)}`,
        {
          cause: error,
        },
      );
    }
    try {
      const pack = packOf(value);
      if (pack) packs.push(pack);
    } catch (error) {
      throw new InvalidPackError(`pack module ${file}: export ${name}: ${describeThrown(error)}`, {
        cause: error,
      });
    }
  }
  if (packs.length === 0)
    throw new InvalidPackError(`pack module ${file} exports no pack (an object with a kind and rules)`);
  return packs;
}

/**
 * `--pack <file>`: a declarative pack file (JSON), or a TypeScript/JavaScript module whose exports
 * include one or more packs. Each pack is resolved once here, so a bad kind or a default setting its
 * own schema refuses is a usage error naming the file, not a failure on the first draft.
 */
export async function loadPacks(file: string): Promise<AnyPack[]> {
  try {
    const packs = await readPacks(file);
    new PackRegistry({}, packs);
    return packs;
  } catch (error) {
    // Whatever a pack's code threw while it was loaded or registered: one line naming the pack.
    const message = describeThrown(error);
    const named = message.includes(file) ? message : `pack ${file}: ${message}`;
    throw new UsageError(named, { cause: error });
  }
}

/** `packs.mcq.settings.minRationaleWords: unknown key`: the first problems, each naming its key. */
function describeIssues(issues: readonly z.core.$ZodIssue[], root = ""): string {
  const lines = issues.flatMap((issue) => {
    const path = [root, ...issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))]
      .join("")
      .replace(/^\./, "");
    if (issue.code === "unrecognized_keys")
      return issue.keys.map((key) => `${path ? `${path}.` : ""}${key}: unknown key`);
    const message = issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
    return [`${path || "(config)"}: ${message}`];
  });
  const shown = lines.slice(0, 3).join("; ");
  return lines.length > 3 ? `${shown} (and ${lines.length - 3} more)` : shown;
}

/**
 * `--config <file>`: the deployment config, read and checked against the packs it configures (kinds,
 * rule ids, settings) so that every problem is reported as the key that holds it.
 */
export async function loadConfig(file: string, packs: readonly AnyPack[]): Promise<DeploymentConfig> {
  const fail = (problem: string): never => {
    throw new UsageError(`--config ${file}: ${problem}`);
  };
  let bytes: Buffer = Buffer.alloc(0);
  try {
    bytes = await readRegularFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    fail(code === "ENOENT" ? "no such file" : (error as Error).message);
  }
  const decoded = decodeText(bytes);
  if ("problem" in decoded) return fail(decoded.problem);
  const { text } = decoded;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    fail(`not valid JSON: ${(error as Error).message}`);
  }
  const parsed = DeploymentConfigSchema.safeParse(value);
  if (!parsed.success) return fail(describeIssues(parsed.error.issues));
  const config = parsed.data;

  // A later pack of the same kind replaces an earlier one, as in the registry.
  const byKind = new Map(packs.map((pack) => [pack.kind, pack]));
  for (const [kind, override] of Object.entries(config.packs ?? {})) {
    const at = `packs.${kind}`;
    const pack = byKind.get(kind);
    if (pack === undefined)
      return fail(`${at}: no pack of this kind (known: ${[...byKind.keys()].sort().join(", ")})`);
    const ruleIds = new Set(pack.rules.map((rule) => rule.id));
    for (const [i, id] of (override.disabledRules ?? []).entries())
      if (!ruleIds.has(id)) fail(`${at}.disabledRules[${i}]: unknown rule "${id}"`);
    for (const id of Object.keys(override.rules ?? {}))
      if (!ruleIds.has(id)) fail(`${at}.rules.${id}: unknown rule`);
    if (override.settings && pack.settingsSchema) {
      const settings = pack.settingsSchema.safeParse({ ...pack.settings, ...override.settings });
      if (!settings.success) fail(describeIssues(settings.error.issues, `${at}.settings`));
    }
  }
  try {
    new PackRegistry(config, packs);
  } catch (error) {
    if (error instanceof InvalidPackError) fail(error.message);
    throw error;
  }
  return config;
}
