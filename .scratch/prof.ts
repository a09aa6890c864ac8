import { compileJsonSchema, stableStringify } from "../shared/packs/json.js";
import { parseDraft } from "../shared/validate.js";
const props: Record<string, unknown> = {};
const content: Record<string, unknown> = {};
for (let g = 0; g < 10; g++) {
  const inner: Record<string, unknown> = {};
  const val: Record<string, unknown> = {};
  for (let f = 0; f < 19; f++) {
    inner[`f${f}`] = f % 3 === 0 ? { type: "string", pattern: "^[a-z]+$" } : f % 3 === 1 ? { type: "integer", minimum: 0 } : { enum: ["a", "b", "c"] };
    val[`f${f}`] = f % 3 === 0 ? "abc" : f % 3 === 1 ? 5 : "a";
  }
  props[`g${g}`] = { type: "object", properties: inner, required: ["f0"], additionalProperties: false };
  content[`g${g}`] = val;
}
const schema = { type: "object", properties: props, required: ["g0"] };
const text = JSON.stringify({ id: "d1", kind: "json", content, context: { schema } });
const l = compileJsonSchema(schema); if (!l.ok) throw 0;
const time = (label: string, f: () => unknown) => { const N = 20000; const t = performance.now(); for (let i = 0; i < N; i++) f(); console.log(label, ((performance.now() - t) / N * 1000).toFixed(1), "µs"); };
time("JSON.parse", () => JSON.parse(text));
time("parseDraft", () => parseDraft(text));
time("stableStringify", () => stableStringify(schema));
time("JSON.stringify", () => JSON.stringify(schema));
time("validate", () => l.schema.isValid(content));
time("units", () => l.schema.units(content));
time("lookup fresh", () => compileJsonSchema(JSON.parse(JSON.stringify(schema))));
const bad = structuredClone(content) as any; bad.g1.f3 = ""; bad.g2.f4 = -1; bad.g0.f0 = "";
time("repair bad", () => l.schema.repair(bad));
const fixed = l.schema.repair(bad).content;
time("findings fixed", () => l.schema.findings(fixed));
time("validate bad", () => l.schema.isValid(bad));
time("units bad", () => l.schema.units(bad));
