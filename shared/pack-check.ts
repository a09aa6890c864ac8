import { SeveritySchema } from "./draft.js";
import { InvalidPackError } from "./errors.js";
import type { AnyPack } from "./pack.js";

/**
 * A pack's shape checked when it is registered, as a declarative pack's file is checked by its
 * schema: a TypeScript module's pack is only typed where its author compiled it, and a JavaScript
 * one not at all. A rule of severity `"eror"` would otherwise be accepted and its findings counted
 * as nothing (the failing draft passes); a pack without `rules`, or a rule without `check`, would
 * fail on the first draft as redraft's own TypeError. Each problem names the pack and the rule.
 */

const SOURCES = new Set(["rule", "schema", "test", "judge"]);
const KIND = /^[a-z][a-z0-9_-]*$/;

const shown = (value: unknown): string => {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 39)}…` : value);
  if (value === null || value === undefined) return String(value);
  return `a ${Array.isArray(value) ? "array" : typeof value}`;
};

/** Throws InvalidPackError naming the pack (and the rule) for the first thing wrong with its shape. */
export function checkPackShape(pack: AnyPack): void {
  if (pack === null || typeof pack !== "object")
    throw new InvalidPackError(`a pack must be an object, not ${shown(pack)}`);
  const kind = pack.kind as unknown;
  if (typeof kind !== "string" || !KIND.test(kind))
    throw new InvalidPackError(
      `invalid pack kind ${shown(kind)}: a kind is lower case letters, digits, _ and -, starting with a letter`,
    );
  const fail = (problem: string): never => {
    throw new InvalidPackError(`pack "${kind}": ${problem}`);
  };
  const rules = pack.rules as unknown;
  if (!Array.isArray(rules))
    fail(`rules must be an array of rules (each with an id, a severity and a check), not ${shown(rules)}`);
  if (pack.settings !== undefined && (pack.settings === null || typeof pack.settings !== "object"))
    fail(`settings must be an object, not ${shown(pack.settings)}`);
  for (const method of ["repair", "scoreUnits", "score", "contentJsonSchema", "ready"] as const)
    if (pack[method] !== undefined && typeof pack[method] !== "function")
      fail(`${method} must be a function, not ${shown(pack[method])}`);
  for (const [i, rule] of (rules as unknown[]).entries()) {
    const at = `rules[${i}]`;
    if (rule === null || typeof rule !== "object") fail(`${at} must be a rule object, not ${shown(rule)}`);
    const { id, severity, check, repair, source } = rule as Record<string, unknown>;
    if (typeof id !== "string" || id === "") fail(`${at}: id must be a non-empty string, not ${shown(id)}`);
    const named = `rule "${id}"`;
    if (!SeveritySchema.safeParse(severity).success)
      fail(`${named}: severity ${shown(severity)} is not one of ${SeveritySchema.options.join(", ")}`);
    if (typeof check !== "function") fail(`${named}: check must be a function, not ${shown(check)}`);
    if (repair !== undefined && typeof repair !== "function")
      fail(`${named}: repair must be a function, not ${shown(repair)}`);
    if (source !== undefined && !SOURCES.has(source as string))
      fail(`${named}: source ${shown(source)} is not one of ${[...SOURCES].join(", ")}`);
  }
}
