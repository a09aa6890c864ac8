import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { explainReason, REASON_EXPLANATIONS, reasonsLegend } from "../../app/explain.js";
import { LocalRuntime } from "../../local/runtime.js";
import { loadAsl } from "../../local/state-machine.js";
import { StopReasonSchema } from "../../shared/store/types.js";
import { runDetailView } from "../../ui/api.js";
import { jsonLines, redraft } from "../helpers/run-cli.js";

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-explain-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("reasons in plain words", () => {
  it("every reason of the contract has one line, a sentence", () => {
    for (const reason of StopReasonSchema.options) {
      const text = explainReason(reason) ?? "";
      expect(text, reason).toMatch(/^[A-Z].{20,160}\.$/);
      expect(text).not.toContain("\n");
    }
    expect(Object.keys(REASON_EXPLANATIONS).sort()).toEqual([...StopReasonSchema.options].sort());
    expect(explainReason("toString")).toBeUndefined();
    expect(explainReason(null)).toBeUndefined();
  });

  it("the legend names each reason once", () => {
    const legend = reasonsLegend(["stuck", null, "stuck", "circuit_breaker"]).split("\n");
    expect(legend).toEqual([
      "Reasons:",
      `  circuit_breaker: ${REASON_EXPLANATIONS.circuit_breaker}`,
      `  stuck: ${REASON_EXPLANATIONS.stuck}`,
    ]);
  });
});

describe("the first example of --help, as printed", () => {
  it("runs every draft it names without a rejection, and show, runs --explain and the viewer explain the reasons", async () => {
    const help = (await redraft(["--help"])).stdout;
    const first = /^\s+\$ npx redraft (.+)$/m.exec(help)?.[1] ?? "";
    expect(first).toMatch(/^run /);
    const dataDir = join(work, "help");
    const ran = await redraft(["--data-dir", dataDir, ...first.split(" "), "--json"]);
    expect(ran.code).toBe(0);
    const results = jsonLines(ran.stdout);
    expect(results.length).toBeGreaterThan(4);
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);

    const stuck = results.find((r) => r.reason === "stuck");
    expect(stuck).toBeDefined();
    const shown = await redraft(["--data-dir", dataDir, "show", String(stuck?.runId)]);
    expect(shown.stdout).toContain(`Why: ${REASON_EXPLANATIONS.stuck}`);

    const listed = await redraft(["--data-dir", dataDir, "runs", "--explain"]);
    expect(listed.stdout).toContain(`  stuck: ${REASON_EXPLANATIONS.stuck}`);
    expect(listed.stdout).toContain(`  circuit_breaker: ${REASON_EXPLANATIONS.circuit_breaker}`);

    const runtime = await LocalRuntime.open({ dataDir, retryDelayMs: 0, readOnly: true });
    try {
      const detail = await runDetailView(runtime, await loadAsl(), String(stuck?.runId));
      expect(detail?.reasonExplained).toBe(REASON_EXPLANATIONS.stuck);
      expect(detail?.finalViolations.length).toBeGreaterThan(0);
    } finally {
      await runtime.close();
    }
  }, 180_000);

  it("an unknown kind's rejection names --pack, in its message and under the table", async () => {
    const dataDir = join(work, "packs");
    const json = await redraft([
      "--data-dir",
      dataDir,
      "--llm",
      "none",
      "run",
      "examples/pack-drafts",
      "--json",
    ]);
    const rejected = jsonLines(json.stdout);
    expect(rejected).toHaveLength(4);
    for (const r of rejected) {
      expect(r.reason).toBe("unknown_kind");
      expect(String(r.message)).toMatch(
        /^examples\/pack-drafts\/.+unknown kind .+; add its pack with --pack <file>/,
      );
    }
    const table = await redraft([
      "--data-dir",
      join(work, "packs-table"),
      "--llm",
      "none",
      "run",
      "examples/pack-drafts",
    ]);
    expect(table.stderr).toMatch(/^4 draft\(s\) rejected as unknown_kind, .*--pack <file>/m);
  }, 120_000);
});
