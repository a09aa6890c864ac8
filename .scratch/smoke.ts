import { compileJsonSchema, jsonSchemaCacheStats } from "../shared/packs/json.js";
const schema = {
  type: "object",
  required: ["title", "authors"],
  additionalProperties: false,
  properties: {
    title: { type: "string", minLength: 1 },
    doi: { type: "string", pattern: "^10\\.\\d+/" },
    year: { type: "integer", minimum: 1900 },
    kind: { enum: ["article", "review"] },
    email: { type: "string", format: "email" },
    authors: { type: "array", items: { $ref: "#/$defs/author" } },
  },
  $defs: { author: { type: "object", required: ["name"], additionalProperties: false, properties: { name: { type: "string", pattern: "^\\S" }, orcid: { type: "string", pattern: "^\\d{4}-\\d{4}-\\d{4}-\\d{3}[\\dX]$" } } } },
};
const l = compileJsonSchema(schema);
if (!l.ok) throw new Error(l.problem.message);
const c = { title: "", doi: "", year: 1800, kind: "blog", email: "nope", extra: 1, authors: [{ name: "", orcid: "", x: { y: 1 } }, { name: "B" }] };
console.log(l.schema.findings(c));
const r = l.schema.repair(c);
console.log(JSON.stringify(r, null, 1));
console.log(l.schema.findings(r.content), l.schema.units(c), l.schema.units(r.content));
console.log(jsonSchemaCacheStats());
