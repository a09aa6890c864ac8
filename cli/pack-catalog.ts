import type * as z from "zod";
import { UsageError } from "../app/inputs.js";
import type { AnyPack } from "../shared/pack.js";
import { type OutputStyle, renderTable, wrapText } from "./output.js";

/** One setting a deployment config may name under `packs.<kind>.settings`. */
export interface SettingEntry {
  key: string;
  type: string;
  default: unknown;
}

/** What `redraft packs` tells about a kind: its rules and settings, read from the pack itself. */
export interface PackEntry {
  kind: string;
  description: string;
  rules: { id: string; severity: string; description: string }[];
  settings: SettingEntry[];
}

type Def = z.core.$ZodTypeDef & Record<string, unknown>;
const defOf = (schema: unknown): Def => (schema as z.core.$ZodType)._zod.def as Def;

/** A number's bounds from its checks (`integer ≥ 0`, `integer 10–60000`). */
function numberType(def: Def): string {
  const checks = ((def.checks ?? []) as z.core.$ZodCheck[]).map(
    (c) => c._zod.def as unknown as Record<string, unknown>,
  );
  const int = checks.some((c) => c.check === "number_format" && String(c.format).includes("int"));
  const min = checks.find((c) => c.check === "greater_than")?.value;
  const max = checks.find((c) => c.check === "less_than")?.value;
  const base = int ? "integer" : "number";
  if (min !== undefined && max !== undefined) return `${base} ${min}–${max}`;
  if (min !== undefined) return `${base} ≥ ${min}`;
  if (max !== undefined) return `${base} ≤ ${max}`;
  return base;
}

/** A zod (v4) schema as a short type: `integer ≥ 0`, `string[]`, `"words" | "chars"`, `object[]`. */
export function describeType(schema: unknown): string {
  const def = defOf(schema);
  switch (def.type) {
    case "number":
      return numberType(def);
    case "array": {
      const element = describeType(def.element);
      return `${/[ |]/.test(element) ? `(${element})` : element}[]`;
    }
    case "enum":
      return Object.values(def.entries as Record<string, string | number>)
        .map((v) => JSON.stringify(v))
        .join(" | ");
    case "literal":
      return (def.values as unknown[]).map((v) => JSON.stringify(v)).join(" | ");
    case "optional":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
      return describeType(def.innerType);
    case "nullable":
      return `${describeType(def.innerType)} | null`;
    case "union":
      return (def.options as unknown[]).map(describeType).join(" | ");
    case "pipe":
      return describeType(def.in);
    case "lazy":
      return "object";
    default:
      return def.type;
  }
}

/** A setting's default as its schema states it, when it does. */
function schemaDefault(schema: unknown): unknown {
  const def = defOf(schema);
  if (def.type === "default" || def.type === "prefault") {
    const value = def.defaultValue;
    return typeof value === "function" ? (value as () => unknown)() : value;
  }
  return undefined;
}

/** The type of a default value, for a pack with no settings schema (a declarative file, a module). */
function typeOfValue(value: unknown): string {
  if (Array.isArray(value)) return value.length ? `${typeOfValue(value[0])}[]` : "array";
  if (value === null) return "null";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** The settings of a pack: from its zod settings schema when it has one, else from its defaults. */
export function packSettings(pack: AnyPack): SettingEntry[] {
  const defaults = (pack.settings ?? {}) as Record<string, unknown>;
  const schema = pack.settingsSchema as unknown;
  if (schema !== undefined && defOf(schema).type === "object") {
    const shape = defOf(schema).shape as Record<string, unknown>;
    return Object.entries(shape).map(([key, field]) => ({
      key,
      type: describeType(field),
      default: key in defaults ? defaults[key] : schemaDefault(field),
    }));
  }
  return Object.entries(defaults).map(([key, value]) => ({ key, type: typeOfValue(value), default: value }));
}

/**
 * The packs a command line knows, by kind (a later pack of a kind replaces an earlier one, as in the
 * registry), or the one `kind` names.
 */
export function packCatalog(packs: readonly AnyPack[], kind?: string): PackEntry[] {
  const byKind = new Map(packs.map((pack) => [pack.kind, pack]));
  if (kind !== undefined && !byKind.has(kind))
    throw new UsageError(`no pack of kind ${kind} (known: ${[...byKind.keys()].sort().join(", ")})`);
  return [...byKind.values()]
    .filter((pack) => kind === undefined || pack.kind === kind)
    .sort((a, b) => a.kind.localeCompare(b.kind))
    .map((pack) => ({
      kind: pack.kind,
      description: pack.description,
      rules: pack.rules.map((rule) => ({
        id: rule.id,
        severity: rule.severity,
        description: rule.description,
      })),
      settings: packSettings(pack),
    }));
}

const shortJson = (value: unknown) => {
  const text = value === undefined ? "(none)" : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
};

/** `redraft packs` for a person: per kind, its rules and its settings as tables. */
export function catalogText(entries: readonly PackEntry[], style: OutputStyle): string {
  return entries
    .map((entry) => {
      const rules = renderTable(
        [{ head: "rule", wrapTo: 16 }, { head: "severity" }, { head: "description", wrapTo: 20 }],
        entry.rules.map((r) => [r.id, r.severity, r.description]),
        style,
      );
      const settings = entry.settings.length
        ? renderTable(
            [
              { head: "setting", wrapTo: 14 },
              { head: "type", wrapTo: 12 },
              { head: "default", wrapTo: 16 },
            ],
            entry.settings.map((s) => [s.key, s.type, shortJson(s.default)]),
            style,
          )
        : "(no settings)";
      return [
        wrapText(`${entry.kind} — ${entry.description}`, style.width),
        "",
        `Rules (config: packs.${entry.kind}.disabledRules, packs.${entry.kind}.rules.<id>.severity):`,
        rules,
        "",
        `Settings (config: packs.${entry.kind}.settings.<key>):`,
        settings,
      ].join("\n");
    })
    .join("\n\n");
}
