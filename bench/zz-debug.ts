import { correctDraft } from "../local/in-process.js";
import { runBaseline } from "./lib/baselines.js";
import { SimulatedCorrector } from "./lib/corrector.js";
import { loadProfile } from "./lib/profiles.js";
import { PromptCache } from "./lib/prompt-cache.js";
import { Rng } from "./lib/rng.js";
import { cleanQuestion, injectMcqFaults, MCQ_FAULT_IDS, mcqDraft } from "./lib/mcq-corpus.js";
import { Yardstick } from "./lib/yardstick.js";
import { PackRegistry } from "../shared/registry.js";
import { MemoryBlobStore, MemoryRunStore } from "../shared/store/memory.js";
import type { ModelRequest } from "../shared/model/types.js";
const profile = await loadProfile(process.argv[2] ?? "sloppy");
const rng = new Rng(20260219);
// replicate corpus mcq only for first N
const { cleanRecord, deepClone, JSON_MODEL_FAULT_IDS, JSON_MODEL_FAULTS, JSON_REPAIRABLE_FAULT_IDS, JSON_REPAIRABLE_FAULTS } = await import("./lib/json-corpus.js");
const cases: any[] = [];
for (let i = 0; i < 120; i++) {
  if (i % 2 === 0) { const reference = cleanQuestion(rng); const faults = rng.sample(MCQ_FAULT_IDS, rng.int(1, 4)); cases.push({ draft: mcqDraft(`mcq-${i}`, injectMcqFaults(reference, faults, rng)), reference, faults }); }
  else { const reference = cleanRecord(rng, i, "typical"); const content = deepClone(reference);
    if (rng.chance(0.35)) { for (const f of rng.sample(JSON_REPAIRABLE_FAULT_IDS, rng.int(1, 2))) JSON_REPAIRABLE_FAULTS[f]?.(content, rng); }
    else { for (const f of rng.sample(JSON_MODEL_FAULT_IDS, rng.int(1, 3))) JSON_MODEL_FAULTS[f]?.(content, rng); if (rng.chance(0.7)) JSON_REPAIRABLE_FAULTS.empty_optional?.(content, rng); } }
}
const mcq = cases.filter((c) => c.draft.kind === "mcq");
const refs = new Map(mcq.map((c) => [c.draft.id, c.reference]));
const ys = new Yardstick(new PackRegistry());
const registry = new PackRegistry({ loop: { maxAttempts: 3 } });
for (const c of mcq) {
  const logR: string[] = []; const logB: string[] = [];
  const rec = (log: string[]) => (r: ModelRequest) => log.push(`a${r.subject?.attempt}: ${r.subject?.violations.map((v) => `${v.ruleId}@${v.path}`).join(", ")}`);
  const m1 = new SimulatedCorrector(profile.create(refs as any, 20260219), new PromptCache(), rec(logR));
  let t = 0;
  const res = await correctDraft(c.draft, { registry, runs: new MemoryRunStore(), blobs: new MemoryBlobStore(), model: m1, clock: () => new Date(++t * 1000), dedupeWindowMs: 0, runId: `r-${c.draft.id}`, retryDelayMs: 0 });
  const m2 = new SimulatedCorrector(profile.create(refs as any, 20260219), new PromptCache(), rec(logB));
  const b = await runBaseline("last-answer", c.draft, c.reference, m2, ys, 3);
  if (res.status !== "validated" && b.validated) {
    console.log(`${c.draft.id} redraft ${res.reason} faults ${c.faults}`); console.log("  R " + logR.join("\n  R ")); console.log("  B " + logB.join("\n  B "));
  }
}
