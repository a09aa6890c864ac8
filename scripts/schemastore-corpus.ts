/**
 * `npx tsx scripts/schemastore-corpus.ts --repo <schemastore git dir>`: runs SchemaStore's invalid test
 * documents (`src/negative_test/<name>/*.json`) and valid ones (`src/test/<name>/*.json`) through the
 * json pack with no model, each against its schema (`src/schemas/json/<name>.json`), and reports:
 * invalid documents that end validated through a lossy removal (a removed value that held information:
 * the goal is 0), under the default (lossless) repair and under `repair: "aggressive"`; valid documents
 * the pack does not pass; and the schemas it refuses, grouped by why.
 *
 * The repository is read with git (a bare clone or a checkout: `git -C <dir> show HEAD:<path>`), nothing
 * is fetched. `--json` prints the figures as one JSON object. `--fixtures <dir>` reads a slice laid out as
 * `<dir>/<name>/{schema.json,valid/*.json,invalid/*.json}` instead: the one kept in the repository,
 * tests/fixtures/json-schema-schemastore, is what tests/packs/json-schemastore.test.ts checks
 * (`npx tsx scripts/schemastore-corpus.ts --fixtures tests/fixtures/json-schema-schemastore`).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Draft, Repair } from "../shared/draft.js";
import { compileJsonSchema } from "../shared/packs/json/json.js";
import { carriesNothing } from "../shared/packs/json/repair.js";
import { PackRegistry } from "../shared/registry.js";
import { validateDraft } from "../shared/validate.js";

/** One schema of the corpus with its test documents, parsed. */
export interface CorpusEntry {
  readonly name: string;
  readonly schema: unknown;
  readonly valid: readonly { file: string; content: unknown }[];
  readonly invalid: readonly { file: string; content: unknown }[];
}

export interface CorpusFigures {
  schemas: number;
  refused: Record<string, number>;
  refusedNames: Record<string, string[]>;
  invalidDocuments: number;
  /** Invalid documents that end validated, per repair setting, and how many of them through a lossy removal. */
  validated: { lossless: number; aggressive: number };
  lossyValidated: { lossless: number; aggressive: number };
  lossyExamples: string[];
  validDocuments: number;
  validNotPassed: string[];
}

const registries = {
  lossless: new PackRegistry(),
  aggressive: new PackRegistry({ packs: { json: { settings: { repair: "aggressive" } } } }),
};

/** A removal that took away information: neither an empty value nor a key the schema forbids. */
export function isLossy(repair: Repair): boolean {
  return !(carriesNothing(repair.before) || /allows no property/.test(repair.message));
}

/** Why a schema is refused, as a short class the report groups by. */
function refusalClass(message: string): string {
  if (/unsupported \$schema/.test(message)) return `unsupported $schema`;
  const ref = /\$ref "([^"]*)" points outside the schema/.exec(message);
  if (ref) return /^[a-z][a-z0-9+.-]*:/i.test(ref[1] ?? "") ? "$ref to a URL" : "$ref to a sibling file";
  if (/exponential time|polynomial time/.test(message)) return "unsafe pattern";
  if (/__proto__/.test(message)) return "properties names __proto__";
  if (/^the JSON Schema is invalid: schema/.test(message)) return "invalid against its meta-schema";
  return "other";
}

const draftOf = (name: string, content: unknown, schema: unknown): Draft => ({
  id: name,
  kind: "json",
  content: content as Draft["content"],
  context: { schema },
});

export async function checkCorpus(entries: readonly CorpusEntry[]): Promise<CorpusFigures> {
  const figures: CorpusFigures = {
    schemas: entries.length,
    refused: {},
    refusedNames: {},
    invalidDocuments: 0,
    validated: { lossless: 0, aggressive: 0 },
    lossyValidated: { lossless: 0, aggressive: 0 },
    lossyExamples: [],
    validDocuments: 0,
    validNotPassed: [],
  };
  for (const entry of entries) {
    const lookup = compileJsonSchema(entry.schema);
    if (!lookup.ok) {
      const why = refusalClass(lookup.problem.message);
      figures.refused[why] = (figures.refused[why] ?? 0) + 1;
      figures.refusedNames[why] = [...(figures.refusedNames[why] ?? []), entry.name];
      continue;
    }
    for (const doc of entry.invalid) {
      if (doc.content === null || doc.content === undefined) continue;
      figures.invalidDocuments += 1;
      for (const mode of ["lossless", "aggressive"] as const) {
        const report = await validateDraft(draftOf(entry.name, doc.content, entry.schema), {
          registry: registries[mode],
        }).catch(() => undefined);
        if (!report?.passed) continue;
        figures.validated[mode] += 1;
        const lossy = report.repairs.filter(isLossy);
        if (lossy.length > 0) {
          figures.lossyValidated[mode] += 1;
          if (mode === "lossless")
            figures.lossyExamples.push(`${entry.name}/${doc.file}: ${lossy.map((r) => r.path).join(", ")}`);
        }
      }
    }
    for (const doc of entry.valid) {
      if (doc.content === null || doc.content === undefined) continue;
      figures.validDocuments += 1;
      const report = await validateDraft(draftOf(entry.name, doc.content, entry.schema)).catch(
        () => undefined,
      );
      if (!report?.passed) figures.validNotPassed.push(`${entry.name}/${doc.file}`);
    }
  }
  return figures;
}

/** The corpus as a SchemaStore git repository holds it: schemas that have at least one JSON test document. */
function readRepository(repo: string, limit: number): CorpusEntry[] {
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", maxBuffer: 1 << 28 });
  const files = git("ls-tree", "-r", "--name-only", "HEAD", "src/test", "src/negative_test")
    .split("\n")
    .filter((f) => f.endsWith(".json"));
  const byName = new Map<string, { valid: string[]; invalid: string[] }>();
  for (const file of files) {
    const [, folder, name] = file.split("/");
    if (!name) continue;
    const docs = byName.get(name) ?? { valid: [], invalid: [] };
    (folder === "negative_test" ? docs.invalid : docs.valid).push(file);
    byName.set(name, docs);
  }
  const parse = (path: string): unknown => {
    try {
      return JSON.parse(git("show", `HEAD:${path}`));
    } catch {
      return undefined;
    }
  };
  const entries: CorpusEntry[] = [];
  for (const [name, docs] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    if (docs.invalid.length === 0) continue;
    const schema = parse(`src/schemas/json/${name}.json`);
    if (schema === undefined) continue;
    const load = (paths: string[]) =>
      paths.map((file) => ({ file: file.slice(file.lastIndexOf("/") + 1), content: parse(file) }));
    entries.push({ name, schema, valid: load(docs.valid), invalid: load(docs.invalid) });
    if (entries.length >= limit) break;
  }
  return entries;
}

/** A slice of the corpus kept as files: `<dir>/<name>/schema.json`, `valid/*.json`, `invalid/*.json`. */
export function readFixtures(dir: string): CorpusEntry[] {
  const load = (folder: string) =>
    readdirSync(folder)
      .filter((f) => f.endsWith(".json"))
      .map((file) => ({ file, content: JSON.parse(readFileSync(join(folder, file), "utf8")) as unknown }));
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map(({ name }) => ({
      name,
      schema: JSON.parse(readFileSync(join(dir, name, "schema.json"), "utf8")) as unknown,
      valid: load(join(dir, name, "valid")),
      invalid: load(join(dir, name, "invalid")),
    }));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      repo: { type: "string" },
      fixtures: { type: "string" },
      json: { type: "boolean", default: false },
      limit: { type: "string" },
    },
  });
  if (!values.repo && !values.fixtures)
    throw new Error("--repo <SchemaStore git directory> or --fixtures <slice directory> is required");
  const entries = values.fixtures
    ? readFixtures(values.fixtures)
    : readRepository(values.repo ?? "", values.limit ? Number(values.limit) : Number.POSITIVE_INFINITY);
  const figures = await checkCorpus(entries);
  if (values.json) {
    console.log(JSON.stringify(figures));
    return;
  }
  const lines = [
    `schemas with invalid JSON test documents: ${figures.schemas}`,
    `schemas refused: ${Object.values(figures.refused).reduce((a, b) => a + b, 0)}`,
    ...Object.entries(figures.refused)
      .sort(([, a], [, b]) => b - a)
      .map(([why, n]) => `  ${why}: ${n} (${(figures.refusedNames[why] ?? []).slice(0, 6).join(", ")}…)`),
    `invalid documents checked: ${figures.invalidDocuments}`,
    `  ending validated, lossless repair (default): ${figures.validated.lossless}, through a lossy removal: ${figures.lossyValidated.lossless}`,
    `  ending validated, aggressive repair: ${figures.validated.aggressive}, through a lossy removal: ${figures.lossyValidated.aggressive}`,
    ...figures.lossyExamples.slice(0, 10).map((e) => `    lossy: ${e}`),
    `valid documents checked: ${figures.validDocuments}, not passed: ${figures.validNotPassed.length}`,
    ...figures.validNotPassed.slice(0, 10).map((e) => `    ${e}`),
  ];
  console.log(lines.join("\n"));
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
