/**
 * The JSON-Schema-Test-Suite's required cases for draft-04, draft-06, draft-07 and 2020-12, object instances, through
 * `validateDraft`, the way JSON Schema implementations test themselves (the data is vendored under
 * tests/fixtures/json-schema-test-suite, see its README).
 *
 * Each case is also run through plain Ajv configured for its draft (the Ajv class of the draft,
 * ajv-formats, `strict: false`, `ownProperties: true`, the suite's remotes added), to tell redraft's
 * own deviations from Ajv's:
 * - where plain Ajv follows the specification, redraft must too: its verdict (repair off) is the
 *   expected one, and with repair on, a valid instance is left as it is and what is left to report
 *   after repair is exactly Ajv's errors on the repaired instance;
 * - where plain Ajv itself deviates, the case is in AJV_DEVIATIONS with the reason (and in docs/packs.md's
 *   json section); the test checks that Ajv still deviates, so the list cannot go stale, and that
 *   redraft answers with a report or InvalidSchemaError, never a raw exception;
 * - where redraft refuses the schema by design (it never fetches a remote `$ref` and checks only with
 *   the dialects it supports), the case is in BY_DESIGN, and redraft must answer InvalidSchemaError.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { Ajv, type AnySchema } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import draft06MetaSchema from "ajv/dist/refs/json-schema-draft-06.json" with { type: "json" };
import Ajv04Module from "ajv-draft-04";
import addFormatsModule from "ajv-formats";
import { afterAll, describe, expect, it } from "vitest";
import { InvalidSchemaError } from "../../shared/errors.js";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { PackRegistry } from "../../shared/registry.js";
import { validateDraft } from "../../shared/validate.js";

const addFormats = addFormatsModule.default;
const Ajv04 = Ajv04Module.default;
const SUITE = "tests/fixtures/json-schema-test-suite";
const DRAFTS = ["draft4", "draft6", "draft7", "draft2020-12"] as const;
/** What each suite folder's schemas declare when they do not say (redraft's default is 2020-12). */
const DECLARED: Partial<Record<SuiteDraft, string>> = {
  draft4: "http://json-schema.org/draft-04/schema#",
  draft6: "http://json-schema.org/draft-06/schema#",
  draft7: "http://json-schema.org/draft-07/schema#",
};
type SuiteDraft = (typeof DRAFTS)[number];

/** Cases where plain Ajv, configured for the draft, does not follow the specification. */
const AJV_DEVIATIONS: Record<string, string> = {
  "draft4/ref > ref overrides any sibling keywords > ref valid, maxItems ignored":
    "Ajv applies the keywords beside a draft-04 $ref, which draft-04 says to ignore",
  "draft6/ref > ref overrides any sibling keywords > ref valid, maxItems ignored":
    "Ajv applies the keywords beside a draft-06 $ref, which draft-06 says to ignore",
  "draft7/ref > ref overrides any sibling keywords > ref valid, maxItems ignored":
    "Ajv applies the keywords beside a draft-07 $ref, which draft-07 says to ignore",
  "draft2020-12/dynamicRef > A $dynamicRef that initially resolves to a schema with a matching $dynamicAnchor resolves to the first $dynamicAnchor in the dynamic scope > The recursive part is valid against the root":
    'Ajv supports only a "#name" $dynamicRef, not one with a URI before the fragment',
  "draft2020-12/dynamicRef > A $dynamicRef that initially resolves to a schema with a matching $dynamicAnchor resolves to the first $dynamicAnchor in the dynamic scope > The recursive part is not valid against the root":
    'Ajv supports only a "#name" $dynamicRef, not one with a URI before the fragment',
  "draft2020-12/dynamicRef > A $dynamicRef that initially resolves to a schema without a matching $dynamicAnchor behaves like a normal $ref to $anchor > The recursive part doesn't need to validate against the root":
    'Ajv supports only a "#name" $dynamicRef, not one with a URI before the fragment',
  "draft2020-12/dynamicRef > multiple dynamic paths to the $dynamicRef keyword > number list with string values":
    "Ajv resolves $dynamicRef through the first dynamic path only",
  "draft2020-12/dynamicRef > multiple dynamic paths to the $dynamicRef keyword > string list with number values":
    "Ajv resolves $dynamicRef through the first dynamic path only",
  "draft2020-12/dynamicRef > $dynamicRef points to a boolean schema > follow $dynamicRef to a false schema":
    "Ajv does not follow a $dynamicRef to a boolean schema",
  "draft2020-12/dynamicRef > $dynamicRef skips over intermediate resources - direct reference > integer property passes":
    "Ajv does not skip intermediate resources when it resolves a $dynamicRef",
  "draft2020-12/enum > empty enum > object is invalid":
    "Ajv rejects an empty enum as an invalid schema; 2020-12 allows it",
  "draft2020-12/ref > refs with relative uris and defs > invalid on inner field":
    "Ajv's compiler overflows its stack on nested relative $id with $defs",
  "draft2020-12/ref > refs with relative uris and defs > invalid on outer field":
    "Ajv's compiler overflows its stack on nested relative $id with $defs",
  "draft2020-12/ref > refs with relative uris and defs > valid on both fields":
    "Ajv's compiler overflows its stack on nested relative $id with $defs",
  "draft2020-12/ref > relative refs with absolute uris and defs > invalid on inner field":
    "Ajv's compiler overflows its stack on nested relative $id with $defs",
  "draft2020-12/ref > relative refs with absolute uris and defs > invalid on outer field":
    "Ajv's compiler overflows its stack on nested relative $id with $defs",
  "draft2020-12/ref > relative refs with absolute uris and defs > valid on both fields":
    "Ajv's compiler overflows its stack on nested relative $id with $defs",
  "draft2020-12/unevaluatedProperties > unevaluatedProperties with if/then/else, then not defined > when if is true and has no unevaluated properties":
    "Ajv does not count what a passing `if` evaluated when `then` is absent",
  "draft2020-12/unevaluatedProperties > unevaluatedProperties with if/then/else, then not defined > when if is false and has unevaluated properties":
    "Ajv does not count what a passing `if` evaluated when `then` is absent",
  "draft2020-12/unevaluatedProperties > unevaluatedProperties can see annotations from if without then and else > valid in case if is evaluated":
    "Ajv does not count what a passing `if` evaluated when `then` is absent",
  "draft2020-12/unevaluatedProperties > unevaluatedProperties with $dynamicRef > with no unevaluated properties":
    "Ajv's validator for this schema recurses without end (redraft reports invalid_schema)",
  "draft2020-12/unevaluatedProperties > unevaluatedProperties with $dynamicRef > with unevaluated properties":
    "Ajv's validator for this schema recurses without end (redraft reports invalid_schema)",
};

/**
 * Groups whose schema redraft refuses on purpose: a draft's schema is untrusted and nothing is fetched,
 * and a schema Ajv would check wrong is refused rather than checked wrong.
 */
const BY_DESIGN: Record<string, string> = {
  "draft4/refRemote": "remote $ref: redraft resolves no reference outside the schema",
  "draft6/refRemote": "remote $ref: redraft resolves no reference outside the schema",
  "draft7/refRemote": "remote $ref: redraft resolves no reference outside the schema",
  "draft2020-12/refRemote": "remote $ref: redraft resolves no reference outside the schema",
  "draft2020-12/dynamicRef > strict-tree schema, guards against misspelled properties":
    "remote $ref: redraft resolves no reference outside the schema",
  "draft2020-12/dynamicRef > tests for implementation dynamic anchor and reference link":
    "remote $ref: redraft resolves no reference outside the schema",
  "draft2020-12/dynamicRef > $ref and $dynamicAnchor are independent of order - $defs first":
    "remote $ref: redraft resolves no reference outside the schema",
  "draft2020-12/dynamicRef > $ref and $dynamicAnchor are independent of order - $ref first":
    "remote $ref: redraft resolves no reference outside the schema",
  "draft4/properties > properties whose names are Javascript object property names":
    "`properties` naming __proto__: Ajv never applies that entry, so redraft refuses the schema rather than check it wrong",
  "draft6/properties > properties whose names are Javascript object property names":
    "`properties` naming __proto__: Ajv never applies that entry, so redraft refuses the schema rather than check it wrong",
  "draft7/properties > properties whose names are Javascript object property names":
    "`properties` naming __proto__: Ajv never applies that entry (and its validator throws beside unevaluatedProperties), so redraft refuses the schema rather than check it wrong",
  "draft2020-12/properties > properties whose names are Javascript object property names":
    "`properties` naming __proto__: Ajv never applies that entry (and its validator throws beside unevaluatedProperties), so redraft refuses the schema rather than check it wrong",
  "draft2020-12/vocabulary > schema that uses custom metaschema with with no validation vocabulary":
    "custom meta-schema: redraft checks with the draft-07, 2019-09 and 2020-12 dialects only",
};

interface SuiteCase {
  description: string;
  data: unknown;
  valid: boolean;
}
interface SuiteGroup {
  description: string;
  schema: AnySchema;
  tests: SuiteCase[];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The suite's remotes as `http://localhost:1234/…` wants them, per draft (each draft's own and the shared ones). */
function remotesFor(draft: SuiteDraft): [string, AnySchema][] {
  const root = join(SUITE, "remotes");
  const own = `${draft}/`;
  return filesUnder(root)
    .map((path) => relative(root, path))
    .filter((name) =>
      draft === "draft2020-12"
        ? name.startsWith(own)
        : name.startsWith(own) || !DRAFTS.some((d) => name.startsWith(`${d}/`)),
    )
    .map((name) => [`http://localhost:1234/${name}`, JSON.parse(readFileSync(join(root, name), "utf8"))]);
}

/** Plain Ajv, configured the way the draft needs, with the suite's remotes. */
function plainAjv(draft: SuiteDraft): Ajv | Ajv2020 {
  const options = { strict: false, ownProperties: true, logger: false } as const;
  const ajv =
    draft === "draft4"
      ? (new Ajv04(options) as unknown as Ajv)
      : draft === "draft2020-12"
        ? new Ajv2020(options)
        : new Ajv(options);
  if (draft === "draft6") ajv.addMetaSchema(draft06MetaSchema);
  addFormats(ajv);
  for (const [uri, schema] of remotesFor(draft)) ajv.addSchema(schema, uri);
  return ajv;
}

/** The schema as a user would send it: the draft named in `$schema` (redraft's default is 2020-12). */
function declared(draft: SuiteDraft, schema: AnySchema): AnySchema {
  const uri = DECLARED[draft];
  if (uri === undefined || typeof schema !== "object" || "$schema" in schema) return schema;
  return { $schema: uri, ...schema };
}

const isObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);
const noRepair = new PackRegistry({ packs: { json: { settings: { repair: "off" } } } });
const withRepair = new PackRegistry();
const tally: Record<string, { cases: number; passed: number; ajvDeviations: number; byDesign: number }> = {};

async function redraftVerdict(schema: AnySchema, data: unknown, registry: PackRegistry) {
  return validateDraft({ id: "suite", kind: "json", content: data, context: { schema } }, { registry });
}

describe.each(DRAFTS)("JSON-Schema-Test-Suite %s, object instances, through validateDraft", (draft) => {
  const files = readdirSync(join(SUITE, "tests", draft)).filter((name) => name.endsWith(".json"));
  const counts = { cases: 0, passed: 0, ajvDeviations: 0, byDesign: 0 };
  tally[draft] = counts;

  it.each(files)("%s", async (file) => {
    const groups: SuiteGroup[] = JSON.parse(readFileSync(join(SUITE, "tests", draft, file), "utf8"));
    const fileId = `${draft}/${file.replace(/\.json$/, "")}`;
    const problems: string[] = [];
    for (const group of groups) {
      const cases = group.tests.filter((t) => isObject(t.data));
      if (cases.length === 0) continue;
      const schema = declared(draft, group.schema);
      const designReason = BY_DESIGN[fileId] ?? BY_DESIGN[`${fileId} > ${group.description}`];
      let ajvValidate: ((data: unknown) => boolean) | undefined;
      try {
        const compiled = plainAjv(draft).compile(schema);
        ajvValidate = (data) => compiled(data) === true;
      } catch {
        ajvValidate = undefined; // Ajv cannot compile a schema the suite calls valid: a deviation
      }
      for (const test of cases) {
        counts.cases += 1;
        const id = `${fileId} > ${group.description} > ${test.description}`;
        let ajvRight: boolean;
        try {
          ajvRight = ajvValidate !== undefined && ajvValidate(test.data) === test.valid;
        } catch {
          ajvRight = false;
        }
        if (designReason) {
          counts.byDesign += 1;
          const refused = await redraftVerdict(schema, test.data, noRepair).then(
            () => false,
            (error) => error instanceof InvalidSchemaError,
          );
          if (!refused) problems.push(`${id}: redraft should refuse the schema (${designReason})`);
          continue;
        }
        const deviation = AJV_DEVIATIONS[id];
        if (deviation) {
          counts.ajvDeviations += 1;
          if (ajvRight)
            problems.push(`${id}: plain Ajv now follows the specification; remove it from AJV_DEVIATIONS`);
          for (const registry of [noRepair, withRepair]) {
            const outcome = await redraftVerdict(schema, test.data, registry).then(
              () => "report",
              (error: Error) =>
                error instanceof InvalidSchemaError ? "invalid_schema" : `${error.name}: ${error.message}`,
            );
            if (outcome !== "report" && outcome !== "invalid_schema")
              problems.push(`${id}: redraft threw ${outcome}`);
          }
          continue;
        }
        if (!ajvRight) {
          problems.push(`${id}: plain Ajv deviates here; list the case in AJV_DEVIATIONS with the reason`);
          continue;
        }
        try {
          const plain = await redraftVerdict(schema, test.data, noRepair);
          if (plain.passed !== test.valid) {
            problems.push(
              `${id}: expected ${test.valid ? "valid" : "invalid"}, redraft says ${plain.passed}`,
            );
            continue;
          }
          const repaired = await redraftVerdict(schema, test.data, withRepair);
          if (test.valid && (!repaired.passed || repaired.repairs.length > 0)) {
            problems.push(`${id}: repair touched a valid instance`);
            continue;
          }
          const lookup = compileJsonSchema(schema);
          if (!lookup.ok) throw new Error(lookup.problem.message);
          const content = repaired.repairs.length > 0 ? applyRepairs(test.data, repaired.repairs) : test.data;
          const left = repaired.violations.filter((v) => v.ruleId.startsWith("schema:")).length;
          if (left !== lookup.schema.errors(content).length)
            problems.push(
              `${id}: after repair ${left} violations, Ajv reports ${lookup.schema.errors(content).length}`,
            );
          counts.passed += 1;
        } catch (error) {
          problems.push(`${id}: redraft threw ${(error as Error).name}: ${(error as Error).message}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

/** The instance with the reported removals applied (every json repair is a removal at a pointer). */
function applyRepairs(data: unknown, repairs: readonly { action: string; path: string }[]): unknown {
  const copy = structuredClone(data);
  for (const { action, path } of repairs) {
    expect(action).toBe("remove");
    const segments = path
      .slice(1)
      .split("/")
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = segments.pop() as string;
    let parent = copy as Record<string, unknown>;
    for (const s of segments) parent = parent[s] as Record<string, unknown>;
    delete parent[last];
  }
  return copy;
}

afterAll(() => {
  // The figures docs/packs.md's json section quotes; printed so a run shows them.
  for (const [draft, c] of Object.entries(tally)) {
    if (c.cases === 0) continue;
    console.info(
      `${draft}: ${c.cases} object-instance cases, ${c.passed} pass through redraft, ${c.ajvDeviations} Ajv deviations, ${c.byDesign} refused by design`,
    );
  }
});
