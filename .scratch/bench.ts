import { inspectWithPack, resolvePack } from "../shared/engine.js";
import { jsonPack } from "../shared/packs/json.js";
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
const resolved = resolvePack(jsonPack);
const bad = structuredClone(content) as any; bad.g1.f3 = ""; bad.g2.f4 = -1; bad.g0.f0 = "";
for (const [label, c] of [["valid", content], ["3 errors", bad]] as const) {
  const text = JSON.stringify({ id: "d1", kind: "json", content: c, context: { schema } });
  const N = 20000;
  const c0 = process.cpuUsage();
  let last;
  for (let i = 0; i < N; i++) last = inspectWithPack(resolved, parseDraft(text));
  const cu = process.cpuUsage(c0); const ms = (cu.user + cu.system) / 1000;
  console.log(label, Math.round(N / (ms / 1000)), "drafts/s", last!.report.score, last!.report.counts, last!.report.repairs.length);
}
