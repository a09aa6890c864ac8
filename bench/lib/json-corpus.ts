import type { Draft } from "../../shared/draft.js";
import type { Rng } from "./rng.js";

/**
 * A seed-001-like extraction schema (a clinical study record: ~200 property definitions, nested
 * objects, arrays of objects, patterns, formats, enums, `$ref`s, pattern-constrained OPTIONAL fields
 * such as orcid, issn, pmid and ISO 8601 durations), clean records drawn from a seeded PRNG, and
 * fault injectors: some that deterministic repair removes, some that only a correction can fix.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

const str = (extra: JsonObject = {}): JsonObject => ({ type: "string", ...extra });
const int = (minimum?: number, maximum?: number): JsonObject => ({
  type: "integer",
  ...(minimum !== undefined && { minimum }),
  ...(maximum !== undefined && { maximum }),
});
const num = (minimum?: number, maximum?: number): JsonObject => ({
  type: "number",
  ...(minimum !== undefined && { minimum }),
  ...(maximum !== undefined && { maximum }),
});
const bool: JsonObject = { type: "boolean" };
const enumOf = (...values: string[]): JsonObject => ({ type: "string", enum: values });
const ref = (name: string): JsonObject => ({ $ref: `#/$defs/${name}` });
const obj = (properties: Record<string, JsonObject>, required: string[] = [], closed = true): JsonObject => ({
  type: "object",
  properties,
  required,
  ...(closed && { additionalProperties: false }),
});
const arr = (items: JsonObject, minItems = 0): JsonObject => ({ type: "array", items, minItems });

const PCT = num(0, 100);
const RISK = enumOf("low", "some_concerns", "high");
const BASELINE_MEASURES = [
  "age_mean",
  "age_sd",
  "female_pct",
  "bmi_mean",
  "bmi_sd",
  "smokers_pct",
  "diabetes_pct",
  "hypertension_pct",
  "prior_mi_pct",
  "heart_failure_pct",
  "ckd_pct",
  "egfr_mean",
  "ldl_mean",
  "hdl_mean",
  "hba1c_mean",
  "sbp_mean",
  "dbp_mean",
  "heart_rate_mean",
  "statin_pct",
  "aspirin_pct",
];

/** The extraction schema, JSON Schema 2020-12. */
export function studySchema(): JsonObject {
  const baselineProps: Record<string, JsonObject> = { arm_label: str({ minLength: 1 }), n: int(0) };
  for (const m of BASELINE_MEASURES) baselineProps[m] = m.endsWith("_pct") ? PCT : num(0);
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "https://example.org/schemas/study-extraction.json",
    title: "Clinical study extraction",
    $defs: {
      isoDuration: str({
        pattern: "^P(?!$)(\\d+Y)?(\\d+M)?(\\d+W)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?$",
      }),
      country: str({ pattern: "^[A-Z]{2}$" }),
      orcid: str({ pattern: "^\\d{4}-\\d{4}-\\d{4}-\\d{3}[\\dX]$" }),
      issn: str({ pattern: "^\\d{4}-\\d{3}[\\dX]$" }),
      date: str({ format: "date" }),
    },
    ...obj(
      {
        id: str({ pattern: "^EXT-[0-9]{6}$" }),
        title: str({ minLength: 10 }),
        doi: str({ pattern: "^10\\.\\d{4,9}/\\S+$" }),
        pmid: str({ pattern: "^[0-9]{1,8}$" }),
        pmcid: str({ pattern: "^PMC[0-9]+$" }),
        published: ref("date"),
        received: ref("date"),
        accepted: ref("date"),
        language: enumOf("en", "de", "fr", "es", "zh", "ja", "other"),
        open_access: bool,
        license: enumOf("CC-BY-4.0", "CC-BY-NC-4.0", "CC0-1.0", "other"),
        url: str({ format: "uri" }),
        keywords: arr(str({ minLength: 2 }), 1),
        journal: obj(
          {
            name: str({ minLength: 2 }),
            abbreviation: str(),
            issn: ref("issn"),
            eissn: ref("issn"),
            publisher: str(),
            volume: int(1),
            issue: str({ pattern: "^[0-9A-Za-z-]+$" }),
            pages: str({ pattern: "^[0-9]+(-[0-9]+)?$" }),
            impact_factor: num(0),
            country: ref("country"),
          },
          ["name", "volume"],
        ),
        authors: arr(
          obj(
            {
              given: str({ minLength: 1 }),
              family: str({ minLength: 1 }),
              position: int(1),
              orcid: ref("orcid"),
              email: str({ format: "email" }),
              corresponding: bool,
              contribution: arr(
                enumOf(
                  "conceptualization",
                  "methodology",
                  "investigation",
                  "analysis",
                  "writing",
                  "supervision",
                ),
              ),
              degrees: arr(str()),
              twitter: str({ pattern: "^@[A-Za-z0-9_]{1,15}$" }),
              ringgold: str({ pattern: "^[0-9]{4,6}$" }),
              affiliations: arr(
                obj(
                  {
                    name: str({ minLength: 2 }),
                    department: str(),
                    city: str(),
                    country: ref("country"),
                    ror: str({ pattern: "^https://ror\\.org/0[a-z0-9]{8}$" }),
                  },
                  ["name", "country"],
                ),
                1,
              ),
            },
            ["given", "family", "position", "affiliations"],
          ),
          1,
        ),
        study: obj(
          {
            design: enumOf("rct", "cluster_rct", "crossover", "cohort", "case_control", "cross_sectional"),
            registration: str({ pattern: "^NCT\\d{8}$" }),
            duration: ref("isoDuration"),
            follow_up: ref("isoDuration"),
            setting: enumOf("primary_care", "hospital", "community", "mixed"),
            blinding: enumOf("none", "single", "double", "triple"),
            randomized: bool,
            multicenter: bool,
            centers: int(1),
            sample_size: int(1),
            countries: arr(ref("country"), 1),
            population: obj(
              {
                condition: str({ minLength: 3 }),
                icd10: str({ pattern: "^[A-Z][0-9]{2}(\\.[0-9]{1,2})?$" }),
                age_min: num(0, 120),
                age_max: num(0, 120),
                sex: enumOf("all", "female", "male"),
                bmi_min: num(0),
                bmi_max: num(0),
                egfr_min: num(0),
                inclusion: arr(str()),
                exclusion: arr(str()),
              },
              ["condition", "sex"],
            ),
          },
          ["design", "sample_size", "population", "countries"],
        ),
        arms: arr(
          obj(
            {
              label: str({ minLength: 1 }),
              n: int(0),
              description: str(),
              intervention: obj(
                {
                  type: enumOf("drug", "device", "procedure", "behavioral", "placebo", "other"),
                  name: str({ minLength: 2 }),
                  dose: num(0),
                  dose_unit: enumOf("mg", "g", "mcg", "mL", "IU"),
                  route: enumOf("oral", "iv", "im", "sc", "inhaled", "topical"),
                  frequency: str({ pattern: "^(qd|bid|tid|qid|weekly|monthly|once)$" }),
                  duration: ref("isoDuration"),
                  atc_code: str({ pattern: "^[A-Z][0-9]{2}[A-Z]{2}[0-9]{2}$" }),
                },
                ["type", "name"],
              ),
            },
            ["label", "n", "intervention"],
          ),
          1,
        ),
        baseline: arr(obj(baselineProps, ["arm_label", "n"])),
        outcomes: arr(
          obj(
            {
              name: str({ minLength: 3 }),
              type: enumOf("primary", "secondary", "safety"),
              measure: enumOf("RR", "OR", "HR", "MD", "SMD", "RD"),
              value: { type: "number" },
              ci_low: { type: "number" },
              ci_high: { type: "number" },
              ci_level: num(0, 1),
              p_value: num(0, 1),
              timepoint: ref("isoDuration"),
              unit: str(),
              significant: bool,
              comparison: str(),
              events_intervention: int(0),
              events_control: int(0),
              n_intervention: int(0),
              n_control: int(0),
            },
            ["name", "type", "measure", "value"],
          ),
          1,
        ),
        adverse_events: arr(
          obj(
            {
              term: str({ minLength: 2 }),
              meddra_code: str({ pattern: "^[0-9]{8}$" }),
              grade: int(1, 5),
              serious: bool,
              arm_label: str(),
              count: int(0),
              percent: PCT,
              onset: ref("isoDuration"),
              resolution: enumOf("recovered", "recovering", "not_recovered", "fatal", "unknown"),
            },
            ["term", "count"],
          ),
        ),
        funding: arr(
          obj(
            {
              funder: str({ minLength: 2 }),
              grant_id: str({ pattern: "^[A-Z0-9-]{4,30}$" }),
              country: ref("country"),
              fundref: str({ pattern: "^10\\.13039/[0-9]+$" }),
              industry: bool,
              amount: num(0),
              currency: str({ pattern: "^[A-Z]{3}$" }),
            },
            ["funder"],
          ),
        ),
        methods: obj({
          allocation_concealment: enumOf("central", "envelopes", "unclear", "none"),
          randomization_method: enumOf("computer", "block", "stratified", "minimization", "unclear"),
          itt: bool,
          per_protocol: bool,
          analysis_software: str(),
          alpha: num(0, 1),
          power: num(0, 1),
          sample_size_calculation: str(),
          interim_analyses: int(0),
          stopped_early: bool,
          stop_reason: str(),
          missing_data_method: enumOf("complete_case", "multiple_imputation", "locf", "mixed_model", "other"),
          subgroup_analyses: arr(str()),
          sensitivity_analyses: arr(str()),
          primary_endpoint_definition: str(),
          adjudicated: bool,
          dsmb: bool,
          protocol_url: str({ format: "uri" }),
          sap_url: str({ format: "uri" }),
          multiplicity_adjustment: enumOf("none", "bonferroni", "hierarchical", "holm", "other"),
        }),
        registry_record: obj({
          registry: enumOf("clinicaltrials.gov", "isrctn", "euctr", "anzctr", "other"),
          id: str({ pattern: "^(NCT[0-9]{8}|ISRCTN[0-9]{8})$" }),
          first_posted: ref("date"),
          last_update: ref("date"),
          status: enumOf("completed", "terminated", "active", "recruiting"),
          sponsor: str(),
          sponsor_type: enumOf("industry", "academic", "government", "other"),
          phase: enumOf("1", "2", "3", "4", "n/a"),
          primary_completion: ref("date"),
          enrollment: int(0),
        }),
        citation: obj({
          apa: str(),
          vancouver: str(),
          bibtex_key: str({ pattern: "^[A-Za-z][A-Za-z0-9_:-]*$" }),
          cited_by: int(0),
          altmetric: num(0),
        }),
        conflicts: obj({ declared: bool, statement: str() }, ["declared"]),
        data_availability: obj(
          {
            statement: str(),
            repository: enumOf("zenodo", "dryad", "figshare", "osf", "vivli", "other"),
            accession: str({ pattern: "^[A-Za-z0-9._/-]{3,64}$" }),
            url: str({ format: "uri" }),
            license: enumOf("CC-BY-4.0", "CC0-1.0", "restricted"),
            embargo: ref("isoDuration"),
          },
          ["statement"],
        ),
        quality: obj(
          {
            tool: enumOf("RoB2", "ROBINS-I", "NOS", "GRADE"),
            overall: RISK,
            domains: obj(
              {
                randomization: RISK,
                deviations: RISK,
                missing_data: RISK,
                measurement: RISK,
                selection: RISK,
              },
              [],
            ),
            notes: str(),
          },
          ["tool", "overall"],
        ),
        extraction: obj(
          {
            extractor: str({ minLength: 1 }),
            extracted_at: str({ format: "date-time" }),
            model: str(),
            version: str({ pattern: "^\\d+\\.\\d+\\.\\d+$" }),
            confidence: num(0, 1),
            notes: str(),
            reviewed_by: str(),
            source_pages: arr(int(1)),
            figures_used: arr(str()),
          },
          ["extractor", "extracted_at", "version", "confidence"],
        ),
      },
      ["id", "title", "doi", "published", "journal", "authors", "study", "arms", "outcomes", "extraction"],
    ),
  };
}

/** Property definitions in a schema, counted recursively (`$defs` not counted again). */
export function countSchemaProperties(node: unknown): number {
  if (typeof node !== "object" || node === null) return 0;
  if (Array.isArray(node)) return node.reduce((n: number, x) => n + countSchemaProperties(x), 0);
  let n = 0;
  for (const [key, value] of Object.entries(node)) {
    if (key === "$defs") continue;
    if (key === "properties" && typeof value === "object" && value !== null) {
      n += Object.keys(value).length;
    }
    n += countSchemaProperties(value);
  }
  return n;
}

// ---- clean records ---------------------------------------------------------------------------------

const GIVEN = ["Ana", "Bo", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ines", "Jun", "Kofi", "Lea"];
const FAMILY = [
  "Alvarez",
  "Berg",
  "Chowdhury",
  "Dubois",
  "Eriksen",
  "Fischer",
  "Garcia",
  "Huang",
  "Ito",
  "Jensen",
];
const INSTITUTIONS = [
  ["Karolinska Institutet", "Stockholm", "SE"],
  ["University of Toronto", "Toronto", "CA"],
  ["Charite Berlin", "Berlin", "DE"],
  ["University of Tokyo", "Tokyo", "JP"],
  ["Hospital Clinic Barcelona", "Barcelona", "ES"],
  ["University of Oxford", "Oxford", "GB"],
] as const;
const DRUGS = [
  ["empagliflozin", "A10BK03", "mg", 10],
  ["atorvastatin", "C10AA05", "mg", 40],
  ["metformin", "A10BA02", "mg", 1000],
  ["apixaban", "B01AF02", "mg", 5],
  ["semaglutide", "A10BJ06", "mg", 1],
] as const;
const CONDITIONS = [
  ["type 2 diabetes", "E11"],
  ["atrial fibrillation", "I48.0"],
  ["heart failure", "I50.9"],
  ["hypercholesterolemia", "E78.0"],
] as const;
const OUTCOMES = [
  "major adverse cardiovascular events",
  "all-cause mortality",
  "hospitalization for heart failure",
  "change in HbA1c",
  "stroke or systemic embolism",
  "major bleeding",
];
const AES = ["nausea", "hypoglycemia", "urinary tract infection", "headache", "dizziness", "bleeding"];

const pad = (n: number, width: number) => String(n).padStart(width, "0");
const digits = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.int(0, 9)).join("");
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const isoDate = (rng: Rng, year: number) => `${year}-${pad(rng.int(1, 12), 2)}-${pad(rng.int(1, 28), 2)}`;
const duration = (rng: Rng) => rng.pick(["P12W", "P6M", "P1Y", "P2Y6M", "P52W", "P3Y", "P90D"]);

/** A clean record (it passes the schema): `size` scales the arrays (authors, arms, outcomes, events). */
export function cleanRecord(rng: Rng, index: number, size: "small" | "typical" = "typical"): JsonObject {
  const big = size === "typical";
  const year = rng.int(2015, 2025);
  const [condition, icd10] = rng.pick(CONDITIONS);
  const nAuthors = big ? rng.int(3, 5) : rng.int(1, 3);
  const authors: JsonObject[] = [];
  for (let i = 0; i < nAuthors; i++) {
    const affiliations: JsonObject[] = [];
    for (let j = 0; j < (big ? rng.int(1, 2) : 1); j++) {
      const [name, city, country] = rng.pick(INSTITUTIONS);
      const aff: JsonObject = { name, department: "Department of Medicine", city, country };
      if (rng.chance(0.4)) aff.ror = `https://ror.org/0${digits(rng, 8)}`;
      affiliations.push(aff);
    }
    const a: JsonObject = {
      given: rng.pick(GIVEN),
      family: rng.pick(FAMILY),
      position: i + 1,
      corresponding: i === 0,
      contribution: i === 0 ? ["conceptualization", "writing"] : ["investigation"],
      affiliations,
    };
    if (rng.chance(0.5)) a.orcid = `0000-000${rng.int(1, 3)}-${digits(rng, 4)}-${digits(rng, 3)}X`;
    if (i === 0) a.email = `author${index}@example.org`;
    authors.push(a);
  }
  const nArms = big ? rng.int(2, 3) : 2;
  const arms: JsonObject[] = [];
  const baseline: JsonObject[] = [];
  const [drug, atc, unit, dose] = rng.pick(DRUGS);
  for (let i = 0; i < nArms; i++) {
    const placebo = i === nArms - 1;
    const n = rng.int(80, 2400);
    const intervention: JsonObject = placebo
      ? { type: "placebo", name: "matching placebo", route: "oral", frequency: "qd" }
      : { type: "drug", name: drug, dose: dose * (i + 1), dose_unit: unit, route: "oral", frequency: "qd" };
    if (!placebo && rng.chance(0.5)) intervention.atc_code = atc;
    if (rng.chance(0.4)) intervention.duration = duration(rng);
    const label = placebo ? "placebo" : `${drug} ${dose * (i + 1)} ${unit}`;
    arms.push({ label, n, description: `${label} once daily`, intervention });
    if (big) {
      const b: JsonObject = { arm_label: label, n };
      for (const m of BASELINE_MEASURES)
        b[m] = m.endsWith("_pct") ? round(rng.next() * 60) : round(20 + rng.next() * 100);
      baseline.push(b);
    }
  }
  const outcomes: JsonObject[] = [];
  for (let i = 0; i < (big ? rng.int(3, 5) : rng.int(1, 2)); i++) {
    const value = round(0.6 + rng.next() * 0.6);
    const o: JsonObject = {
      name: rng.pick(OUTCOMES),
      type: i === 0 ? "primary" : rng.pick(["secondary", "safety"]),
      measure: rng.pick(["HR", "RR", "OR"]),
      value,
      ci_low: round(value - 0.15),
      ci_high: round(value + 0.15),
      ci_level: 0.95,
      p_value: round(rng.next() * 0.2, 3),
      significant: value < 0.9,
      comparison: "intervention vs placebo",
    };
    if (rng.chance(0.5)) o.timepoint = duration(rng);
    outcomes.push(o);
  }
  const record: JsonObject = {
    id: `EXT-${pad(index, 6)}`,
    title: `Effect of ${drug} on outcomes in adults with ${condition}: a randomized trial`,
    doi: `10.${rng.int(1000, 9999)}/trial.${year}.${rng.int(100, 999)}`,
    published: isoDate(rng, year),
    language: "en",
    open_access: rng.chance(0.5),
    url: `https://journal.example.org/articles/${index}`,
    keywords: [condition, drug, "randomized controlled trial"],
    journal: {
      name: rng.pick(["The Lancet", "NEJM", "JAMA", "BMJ", "Diabetes Care"]),
      abbreviation: "J",
      publisher: "Example Press",
      volume: rng.int(1, 400),
      issue: String(rng.int(1, 24)),
      pages: `${rng.int(1, 500)}-${rng.int(501, 999)}`,
      impact_factor: round(rng.next() * 90, 1),
      country: "GB",
    },
    authors,
    study: {
      design: "rct",
      setting: rng.pick(["primary_care", "hospital", "mixed"]),
      blinding: "double",
      randomized: true,
      multicenter: true,
      centers: rng.int(2, 300),
      sample_size: arms.reduce((s, a) => s + Number((a as JsonObject).n), 0),
      countries: ["GB", "DE", "SE"].slice(0, rng.int(1, 3)),
      population: {
        condition,
        age_min: 18,
        age_max: rng.int(65, 90),
        sex: "all",
        inclusion: [`adults with ${condition}`],
        exclusion: ["pregnancy", "severe renal impairment"],
      },
    },
    arms,
    outcomes,
    conflicts: { declared: true, statement: "The authors report consulting fees from the sponsor." },
    data_availability: { statement: "Data are available on request.", repository: "vivli" },
    quality: {
      tool: "RoB2",
      overall: "low",
      domains: { randomization: "low", deviations: "low", missing_data: "some_concerns", measurement: "low" },
    },
    extraction: {
      extractor: "extractor-model",
      extracted_at: `${isoDate(rng, 2026)}T10:${pad(rng.int(0, 59), 2)}:00Z`,
      model: "claude-sonnet-5-5",
      version: "1.4.2",
      confidence: round(0.7 + rng.next() * 0.3),
    },
  };
  if (big) {
    record.methods = {
      allocation_concealment: "central",
      randomization_method: "stratified",
      itt: true,
      per_protocol: rng.chance(0.5),
      alpha: 0.05,
      power: 0.9,
      interim_analyses: rng.int(0, 2),
      stopped_early: false,
      missing_data_method: "multiple_imputation",
      subgroup_analyses: ["age", "sex", "baseline eGFR"],
      adjudicated: true,
      dsmb: true,
      multiplicity_adjustment: "hierarchical",
    };
    record.registry_record = {
      registry: "clinicaltrials.gov",
      status: "completed",
      sponsor: "Example Pharma",
      sponsor_type: "industry",
      phase: "3",
      first_posted: isoDate(rng, year - 3),
      enrollment: Number((record.study as JsonObject).sample_size),
    };
    record.citation = { bibtex_key: `trial${year}${index}`, cited_by: rng.int(0, 900) };
    record.baseline = baseline;
    record.adverse_events = AES.slice(0, rng.int(2, 5)).map((term, i) => ({
      term,
      meddra_code: `1000${digits(rng, 4)}`,
      grade: rng.int(1, 3),
      serious: i === 0,
      arm_label: (arms[0] as JsonObject).label as string,
      count: rng.int(0, 90),
      percent: round(rng.next() * 20),
    }));
    record.funding = [
      { funder: "National Institute of Health Research", grant_id: `NIHR-${digits(rng, 6)}`, country: "GB" },
    ];
  }
  if (rng.chance(0.5)) record.pmid = digits(rng, 8);
  if (rng.chance(0.3)) (record.journal as JsonObject).issn = `${digits(rng, 4)}-${digits(rng, 3)}X`;
  if (rng.chance(0.3)) (record.study as JsonObject).registration = `NCT${digits(rng, 8)}`;
  if (rng.chance(0.3)) (record.study as JsonObject).duration = duration(rng);
  if (rng.chance(0.5)) ((record.study as JsonObject).population as JsonObject).icd10 = icd10;
  return record;
}

// ---- pointers ---------------------------------------------------------------------------------------

type Segments = (string | number)[];

export function getAt(root: Json | undefined, path: readonly (string | number)[]): Json | undefined {
  let node: Json | undefined = root;
  for (const seg of path) {
    if (Array.isArray(node)) node = node[Number(seg)];
    else if (node && typeof node === "object")
      node = Object.hasOwn(node, String(seg)) ? node[String(seg)] : undefined;
    else return undefined;
  }
  return node;
}

/** Sets (or, with `undefined`, deletes) the value at `path` in place; false when the parent is missing. */
export function setAt(root: Json, path: readonly (string | number)[], value: Json | undefined): boolean {
  if (path.length === 0) return false;
  const parent = getAt(root, path.slice(0, -1));
  const last = path[path.length - 1] as string | number;
  if (Array.isArray(parent)) {
    const i = Number(last);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) return false;
    if (value === undefined) parent.splice(i, 1);
    else parent[i] = value;
    return true;
  }
  if (parent && typeof parent === "object") {
    if (value === undefined) delete parent[String(last)];
    else parent[String(last)] = value;
    return true;
  }
  return false;
}

export const deepClone = <T>(value: T): T => structuredClone(value);

/** Every scalar of a value with its path (array elements included). */
function leaves(
  value: Json | undefined,
  path: Segments = [],
  out: [Segments, Json][] = [],
): [Segments, Json][] {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) leaves(value[i], [...path, i], out);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) leaves(v, [...path, k], out);
  } else if (value !== undefined) {
    out.push([path, value]);
  }
  return out;
}

/** Share of the reference's scalars found unchanged at the same place in `value`: how much of the truth survived. */
export function fidelity(value: unknown, reference: unknown): number {
  const truth = leaves(reference as Json);
  if (truth.length === 0) return 1;
  return truth.filter(([path, v]) => getAt(value as Json, path) === v).length / truth.length;
}

/**
 * The reference's values the delivered content lost: `deleted` no longer there at all (removed by a
 * repair, a cleanup or the model), `changed` there with another value.
 */
export function lostValues(value: unknown, reference: unknown): { deleted: number; changed: number } {
  let deleted = 0;
  let changed = 0;
  for (const [path, v] of leaves(reference as Json)) {
    const now = getAt(value as Json, path);
    if (now === undefined) deleted++;
    else if (now !== v) changed++;
  }
  return { deleted, changed };
}

// ---- faults -----------------------------------------------------------------------------------------

/** Optional, pattern-constrained places of a record (seed 001's orcid, issn, pmid, ISO 8601 durations…). */
function optionalPatternSlots(record: JsonObject): Segments[] {
  const slots: Segments[] = [["pmid"], ["pmcid"], ["journal", "issn"], ["journal", "eissn"]];
  slots.push(["registry_record", "id"], ["data_availability", "embargo"], ["data_availability", "accession"]);
  slots.push(
    ["study", "registration"],
    ["study", "duration"],
    ["study", "follow_up"],
    ["study", "population", "icd10"],
  );
  const authors = Array.isArray(record.authors) ? record.authors : [];
  authors.forEach((a, i) => {
    slots.push(["authors", i, "orcid"]);
    const affs =
      a && typeof a === "object" && !Array.isArray(a) && Array.isArray(a.affiliations) ? a.affiliations : [];
    affs.forEach((_, j) => {
      slots.push(["authors", i, "affiliations", j, "ror"]);
    });
  });
  const arms = Array.isArray(record.arms) ? record.arms : [];
  arms.forEach((_, i) => {
    slots.push(["arms", i, "intervention", "duration"], ["arms", i, "intervention", "atc_code"]);
  });
  const outcomes = Array.isArray(record.outcomes) ? record.outcomes : [];
  outcomes.forEach((_, i) => {
    slots.push(["outcomes", i, "timepoint"]);
  });
  return slots.filter((s) => getAt(record, s.slice(0, -1)) !== undefined);
}

/** Seed 001's failure: absent optional pattern fields filled with "" (each with probability `share`). */
export function fillEmptyOptionals(record: JsonObject, rng: Rng, share: number): number {
  let filled = 0;
  for (const slot of optionalPatternSlots(record)) {
    if (getAt(record, slot) === undefined && rng.chance(share)) {
      setAt(record, slot, "");
      filled++;
    }
  }
  return filled;
}

type Fault = (record: JsonObject, rng: Rng) => void;
const pickIndex = (record: JsonObject, key: string, rng: Rng) => {
  const list = record[key];
  return Array.isArray(list) && list.length > 0 ? rng.int(0, list.length - 1) : 0;
};

/**
 * Faults a model makes in fields that hold facts: required fields missing or invalid (only a correction
 * fixes them) and a wrong value in an optional field the source does give (repair removes it).
 */
export const JSON_MODEL_FAULTS: Record<string, Fault> = {
  required_missing: (r, rng) => {
    const where = rng.pick<Segments>([
      ["title"],
      ["study", "sample_size"],
      ["journal", "name"],
      ["authors", pickIndex(r, "authors", rng), "family"],
      ["outcomes", pickIndex(r, "outcomes", rng), "value"],
    ]);
    setAt(r, where, undefined);
  },
  required_pattern: (r, rng) => {
    const doi = String(r.doi ?? "10.1000/x");
    if (rng.chance(0.5)) r.doi = `https://doi.org/${doi}`;
    else r.id = String(r.id ?? "EXT-000000").replace("EXT-", "ext_");
  },
  required_enum: (r, rng) => {
    if (rng.chance(0.5)) setAt(r, ["study", "design"], rng.pick(["RCT", "randomized trial", "Randomised"]));
    else setAt(r, ["outcomes", pickIndex(r, "outcomes", rng), "measure"], rng.pick(["hazard ratio", "Odds"]));
  },
  type_error: (r, rng) => {
    if (rng.chance(0.5))
      setAt(r, ["study", "sample_size"], String(getAt(r, ["study", "sample_size"]) ?? "240"));
    else setAt(r, ["journal", "volume"], `Vol. ${String(getAt(r, ["journal", "volume"]) ?? 1)}`);
  },
  format_error: (r, rng) => {
    const [y, m, d] = String(r.published ?? "2020-01-01").split("-");
    if (rng.chance(0.5)) r.published = `${d}/${m}/${y}`;
    else setAt(r, ["extraction", "extracted_at"], "yesterday afternoon");
  },
  range_error: (r, rng) => {
    if (rng.chance(0.5)) setAt(r, ["extraction", "confidence"], 1.4);
    else setAt(r, ["authors", pickIndex(r, "authors", rng), "position"], 0);
  },
  /** A wrong value in an OPTIONAL field that the source does give: repair removes it (losing the fact), a correction restores it. */
  optional_value_error: (r, rng) => {
    const i = pickIndex(r, "outcomes", rng);
    if (rng.chance(0.5)) setAt(r, ["outcomes", i, "ci_level"], 95);
    else setAt(r, ["outcomes", i, "p_value"], rng.pick([1.7, -0.01, 12]));
  },
};
export const JSON_MODEL_FAULT_IDS = Object.keys(JSON_MODEL_FAULTS);

/** Faults the json pack's deterministic repair removes by itself (optional fields, forbidden properties). */
export const JSON_REPAIRABLE_FAULTS: Record<string, Fault> = {
  empty_optional: (r, rng) => {
    if (fillEmptyOptionals(r, rng, 0.35) === 0) r.pmcid = "";
  },
  bad_optional_enum: (r, rng) => {
    r.license = rng.pick(["CC BY", "open", "unknown"]);
  },
  extra_property: (r) => {
    r.notes_internal = "check table 2 again";
  },
};
export const JSON_REPAIRABLE_FAULT_IDS = Object.keys(JSON_REPAIRABLE_FAULTS);

export function jsonDraft(id: string, content: JsonObject, schema: JsonObject): Draft {
  return {
    id,
    kind: "json",
    content,
    context: { intent: "Extract the study record from the paper.", schema },
    metadata: { source: `paper-${id}.pdf` },
  };
}
