import { readFile, stat } from "node:fs/promises";
import * as z from "zod";
import { SeveritySchema } from "../draft.js";
import { InvalidPackError } from "../errors.js";
import { GroundingSettingsSchema } from "../grounding/check.js";
import {
  type JudgeSettings,
  JudgeSettingsSchema,
  type LoopSettings,
  LoopSettingsSchema,
} from "../loop-settings.js";
import type { Finding, Pack, Rule } from "../pack.js";
import { fromPointer, toPointer } from "../pointer.js";
import { decodeText } from "../text-encoding.js";
import {
  type CompiledJsonSchema,
  compileJsonSchema,
  JSON_RULE_IDS,
  OMIT_OPTIONAL_RULE,
  RepairModeSchema,
} from "./json/json.js";
import { compileRulePattern, type RulePattern } from "./rule-pattern.js";

/** A declarative pack's settings: free-form, except `repair`, which means what it means for the json kind. */
const DeclarativeSettingsSchema = z.object({ repair: RepairModeSchema.optional() }).catchall(z.unknown());

/** `*` in a rule's path stands for every element of an array or every value of an object. */
const WILDCARD = "*";

const PointerSchema = z
  .string()
  .regex(/^(\/.*)?$/s, 'must be a JSON pointer such as "/title" ("" for the whole content)');

const RuleBaseSchema = z.object({
  id: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_.:-]*$/, "must start with a letter and hold only letters, digits and _ . : -")
    .max(64),
  path: PointerSchema,
  severity: SeveritySchema.optional(),
  description: z.string().min(1).optional(),
  /** Replaces the default message; `{path}` and `{value}` are filled in. */
  message: z.string().min(1).optional(),
  suggestion: z.string().min(1).optional(),
});

const RequiredRuleSchema = RuleBaseSchema.extend({ type: z.literal("required") }).strict();
const RegexRuleSchema = RuleBaseSchema.extend({
  type: z.literal("regex"),
  pattern: z.string().min(1),
  flags: z
    .string()
    .regex(/^[imsuvd]*$/, "may hold only the flags i, m, s, u, v, d (g and y make matching stateful)")
    .optional(),
  /** true: the text must match; false: the text must not match (a forbidden pattern). */
  mustMatch: z.boolean().optional(),
}).strict();
const ForbiddenWordsRuleSchema = RuleBaseSchema.extend({
  type: z.literal("forbidden_words"),
  words: z.array(z.string().trim().min(1)).min(1),
}).strict();
const LengthRuleSchema = RuleBaseSchema.extend({
  type: z.literal("length"),
  min: z.number().int().nonnegative().optional(),
  max: z.number().int().nonnegative().optional(),
})
  .strict()
  .refine((r) => r.min !== undefined || r.max !== undefined, {
    message: "needs min, max or both",
    path: ["min"],
  })
  .refine((r) => r.min === undefined || r.max === undefined || r.min <= r.max, {
    message: "must not be greater than max",
    path: ["min"],
  });
const EnumRuleSchema = RuleBaseSchema.extend({
  type: z.literal("enum"),
  values: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).min(1),
}).strict();

const DeclarativeRuleSchema = z.discriminatedUnion("type", [
  RequiredRuleSchema,
  RegexRuleSchema,
  ForbiddenWordsRuleSchema,
  LengthRuleSchema,
  EnumRuleSchema,
]);
type DeclarativeRule = z.infer<typeof DeclarativeRuleSchema>;

/** A rule pack written as JSON: a kind, an optional JSON Schema of the content, and rules of five types. */
const DeclarativePackSchema = z
  .object({
    kind: z
      .string()
      .max(64)
      .regex(/^[a-z][a-z0-9_-]*$/, "must be a lower-case name such as abstract or release-notes"),
    description: z.string().min(1),
    /** JSON Schema of the content, checked (and repaired) exactly like the json kind's context.schema. */
    schema: z.record(z.string(), z.unknown()).optional(),
    rules: z.array(DeclarativeRuleSchema).optional(),
    settings: DeclarativeSettingsSchema.optional(),
    loop: LoopSettingsSchema.partial().strict().optional(),
    judge: JudgeSettingsSchema.partial().strict().optional(),
    grounding: GroundingSettingsSchema.optional(),
    instructions: z.string().min(1).optional(),
  })
  .strict();

/** One place a rule's path reached in the content. */
interface Location {
  readonly path: readonly (string | number)[];
  readonly found: boolean;
  readonly value: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every location a path (with `*` wildcards) reaches; a missing step yields one location with found = false. */
function locate(content: unknown, segments: readonly string[]): Location[] {
  let frontier: Location[] = [{ path: [], found: true, value: content }];
  for (const segment of segments) {
    const next: Location[] = [];
    for (const at of frontier) {
      const { value } = at;
      if (!at.found) {
        // Below a missing step a wildcard has no elements to stand for: nothing to check there.
        if (segment !== WILDCARD) next.push({ path: [...at.path, segment], found: false, value: undefined });
      } else if (segment === WILDCARD) {
        const children: [string | number, unknown][] = Array.isArray(value)
          ? value.map((item, k) => [k, item])
          : isRecord(value)
            ? Object.entries(value)
            : [];
        for (const [key, item] of children) next.push({ path: [...at.path, key], found: true, value: item });
      } else if (Array.isArray(value)) {
        const index = /^(0|[1-9]\d*)$/.test(segment) ? Number(segment) : -1;
        const found = index >= 0 && index < value.length;
        next.push({
          path: [...at.path, found ? index : segment],
          found,
          value: found ? value[index] : undefined,
        });
      } else {
        const found = isRecord(value) && Object.hasOwn(value, segment);
        next.push({
          path: [...at.path, segment],
          found,
          value: found && isRecord(value) ? value[segment] : undefined,
        });
      }
    }
    frontier = next;
  }
  return frontier;
}

/** The texts a rule looks at: a string, or each string of an array (each with its own pointer). */
function texts(at: Location): { pointer: string; text: string }[] {
  if (typeof at.value === "string") return [{ pointer: toPointer(at.path), text: at.value }];
  if (!Array.isArray(at.value)) return [];
  const out: { pointer: string; text: string }[] = [];
  at.value.forEach((item, i) => {
    if (typeof item === "string") out.push({ pointer: toPointer([...at.path, i]), text: item });
  });
  return out;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

type Check = (content: unknown) => Finding[];

/**
 * Builds the rule's check once: regexes compile here, so a bad one fails at load, not on a draft.
 * `field` names the rule in errors (`rules[2]`).
 */
function compileCheck(def: DeclarativeRule, field: string, fail: (message: string) => never): Check {
  const segments = fromPointer(def.path);
  const finding = (pointer: string, value: unknown, message: string, suggestion: string): Finding => {
    const f: Finding = {
      message: def.message
        ? def.message.replaceAll("{path}", pointer).replaceAll("{value}", show(value))
        : message,
      path: pointer,
    };
    const s = def.suggestion ?? suggestion;
    if (s) f.suggestion = s;
    return f;
  };
  switch (def.type) {
    case "required":
      return (content) =>
        locate(content, segments)
          .filter(
            (at) =>
              !at.found || at.value === null || (typeof at.value === "string" && at.value.trim() === ""),
          )
          .map((at) => {
            const pointer = toPointer(at.path);
            const what = at.found ? `is ${at.value === null ? "null" : "empty"}` : "is missing";
            return finding(
              pointer,
              at.value,
              `${pointer} ${what}; it is required`,
              `Give ${pointer} a value.`,
            );
          });
    case "regex": {
      // Matched under the guard of a schema's patterns (rule-pattern.ts): a pack file is untrusted too.
      let re: RulePattern;
      try {
        re = compileRulePattern(def.pattern, def.flags ?? "");
      } catch (error) {
        return fail(`${field}.pattern is not a valid regular expression: ${(error as Error).message}`);
      }
      const mustMatch = def.mustMatch ?? true;
      return (content) =>
        locate(content, segments).flatMap((at) =>
          texts(at).flatMap(({ pointer, text }) => {
            const match = re.test(text);
            if (mustMatch && !match) {
              return [
                finding(
                  pointer,
                  text,
                  `${pointer} does not match the pattern ${re}`,
                  `Rewrite ${pointer} so that it matches ${re}.`,
                ),
              ];
            }
            if (!mustMatch && match) {
              const found = re.match(text);
              return [
                finding(
                  pointer,
                  text,
                  found === undefined
                    ? `${pointer} matches the pattern ${re}, which rules it out`
                    : `${pointer} contains ${show(found)}, which the pattern ${re} rules out`,
                  found === undefined
                    ? `Rewrite ${pointer} so that it no longer matches ${re}.`
                    : `Rewrite ${pointer} without ${show(found)}.`,
                ),
              ];
            }
            return [];
          }),
        );
    }
    case "forbidden_words": {
      // Longest first, so that a phrase wins over a word it starts with; whole words only, any case.
      const alternatives = [...new Set(def.words.map((w) => w.toLowerCase()))]
        .sort((a, b) => b.length - a.length)
        .map((w) => escapeRegExp(w).replace(/\s+/g, "\\s+"));
      const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alternatives.join("|")})(?![\\p{L}\\p{N}_])`, "giu");
      return (content) =>
        locate(content, segments).flatMap((at) =>
          texts(at).flatMap(({ pointer, text }) => {
            const found = new Set<string>();
            for (const m of text.matchAll(re)) found.add(m[0].toLowerCase().replace(/\s+/g, " "));
            return [...found].map((word) =>
              finding(
                pointer,
                text,
                `${pointer} uses the forbidden word "${word}"`,
                `Rewrite ${pointer} without "${word}".`,
              ),
            );
          }),
        );
    }
    case "length": {
      const { min, max } = def;
      return (content) =>
        locate(content, segments).flatMap((at) => {
          if (!at.found) return [];
          const pointer = toPointer(at.path);
          const size =
            typeof at.value === "string"
              ? codePoints(at.value)
              : Array.isArray(at.value)
                ? at.value.length
                : undefined;
          if (size === undefined) return [];
          const unit = typeof at.value === "string" ? "characters" : "items";
          if (min !== undefined && size < min) {
            return [
              finding(
                pointer,
                at.value,
                `${pointer} has ${size} ${unit}, fewer than the minimum of ${min}`,
                `Lengthen ${pointer} to at least ${min} ${unit}.`,
              ),
            ];
          }
          if (max !== undefined && size > max) {
            return [
              finding(
                pointer,
                at.value,
                `${pointer} has ${size} ${unit}, more than the maximum of ${max}`,
                `Shorten ${pointer} to at most ${max} ${unit}.`,
              ),
            ];
          }
          return [];
        });
    }
    case "enum": {
      const allowed = new Set<unknown>(def.values);
      const list = def.values.map(show).join(", ");
      return (content) =>
        locate(content, segments)
          .filter((at) => at.found && !allowed.has(at.value))
          .map((at) => {
            const pointer = toPointer(at.path);
            return finding(
              pointer,
              at.value,
              `${pointer} is ${show(at.value)}, not one of ${list}`,
              `Use one of ${list}.`,
            );
          });
    }
  }
}

/** Whether a concrete path is one a `required` rule's (wildcard) path names. */
function matchesPattern(pattern: readonly string[], path: readonly (string | number)[]): boolean {
  return (
    pattern.length === path.length && pattern.every((seg, i) => seg === WILDCARD || seg === String(path[i]))
  );
}

function withoutUndefined<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

/**
 * Turns a parsed JSON pack definition into a Pack. Throws InvalidPackError naming the bad field
 * (`rules[2].pattern: …`); `source` (a file name) prefixes the message.
 */
export function packFromDefinition(def: unknown, source = "pack definition"): Pack {
  const fail = (message: string): never => {
    throw new InvalidPackError(`${source}: ${message}`);
  };
  const parsed = DeclarativePackSchema.safeParse(def);
  if (!parsed.success) return fail(describeIssues(parsed.error));
  const definition = parsed.data;

  const lookup = definition.schema ? compileJsonSchema(definition.schema) : undefined;
  if (lookup && !lookup.ok) return fail(`schema: ${lookup.problem.message}`);
  const schema: CompiledJsonSchema | undefined = lookup?.schema;

  const seen = new Set<string>(schema ? [JSON_RULE_IDS.schema] : []);
  const rules: Rule[] = [];
  const requiredPaths: string[][] = [];
  (definition.rules ?? []).forEach((rule, i) => {
    const field = `rules[${i}]`;
    if (seen.has(rule.id)) fail(`${field}.id "${rule.id}" is used twice (or clashes with the schema rule)`);
    seen.add(rule.id);
    if (rule.type === "required") requiredPaths.push(fromPointer(rule.path));
    const check = compileCheck(rule, field, fail);
    rules.push({
      id: rule.id,
      description: rule.description ?? `${rule.type} check of ${rule.path || "the content"}`,
      severity: rule.severity ?? "error",
      check: ({ content }) => check(content),
    });
  });

  if (schema) {
    rules.unshift({
      id: JSON_RULE_IDS.schema,
      description: `The content conforms to the JSON Schema of the ${definition.kind} pack.`,
      severity: "error",
      source: "schema",
      check: ({ content }) => schema.findings(content),
    });
  }

  const settings = definition.settings ?? {};
  const declaredRules = rules.length - (schema ? 1 : 0);
  const instructions = [definition.instructions, schema ? `${capitalize(OMIT_OPTIONAL_RULE)}.` : undefined]
    .filter((part): part is string => part !== undefined)
    .join(" ");

  const pack: {
    -readonly [K in keyof Pack]: Pack[K];
  } = {
    kind: definition.kind,
    description: definition.description,
    settings,
    settingsSchema: DeclarativeSettingsSchema,
    rules,
    // The schema counts its fields, each declared rule one unit more.
    scoreUnits: ({ content }) => (schema ? schema.units(content) : 0) + declaredRules,
  };
  if (schema) {
    // A field a `required` rule names stays, even where the schema calls it optional.
    const keep = (path: readonly (string | number)[]) => requiredPaths.some((p) => matchesPattern(p, path));
    pack.repair = ({ content, settings: current }) =>
      schema.repair(content, { keep, mode: RepairModeSchema.catch("lossless").parse(current.repair) });
    pack.contentJsonSchema = () => schema.schema;
  }
  if (definition.loop) pack.loop = withoutUndefined(definition.loop) as Partial<LoopSettings>;
  if (definition.judge) pack.judge = withoutUndefined(definition.judge) as Partial<JudgeSettings>;
  if (definition.grounding) pack.grounding = definition.grounding;
  if (instructions) pack.instructions = instructions;
  return pack;
}

/** One line per problem, each naming the field as a reader of the file would (`rules[2].pattern: …`). */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path
        .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i > 0 ? "." : ""}${String(p)}`))
        .join("");
      return field ? `${field}: ${issue.message}` : issue.message;
    })
    .join("; ");
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Reads and builds a declarative pack file; a missing file or bad JSON is an InvalidPackError naming the file. */
export async function loadPackFile(path: string): Promise<Pack> {
  let bytes: Buffer;
  try {
    // Only a regular file is read: a FIFO would hold the command for ever.
    if (!(await stat(path)).isFile())
      throw new InvalidPackError(`pack file ${path} is not a regular file; a pack file must be one`);
    bytes = await readFile(path);
  } catch (error) {
    if (error instanceof InvalidPackError) throw error;
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : (error as Error).message;
    throw new InvalidPackError(`pack file ${path} cannot be read: ${reason}`, { cause: error });
  }
  // As a draft file: a manifest in Latin-1 would otherwise load with U+FFFD in its patterns and texts.
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new InvalidPackError(`pack file ${path} ${decoded.problem}`);
  const { text } = decoded;
  let definition: unknown;
  try {
    definition = JSON.parse(text);
  } catch (error) {
    throw new InvalidPackError(`pack file ${path} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return packFromDefinition(definition, `pack file ${path}`);
}
