/**
 * Issue 34, "a pool that grows with demand up to a bound and a queue that is fair between drafts": the
 * pattern pool of shared/packs/json/regex-guard.ts under ten hostile drafts submitted before the benign
 * ones. The benign drafts' checks end before any hostile one (their tests take turns with the hostile
 * drafts' first tries in the quick lane, never wait behind the slow lane), each with the report it has
 * alone; every hostile draft ends too_slow; the quick lane grew past its first two workers and neither
 * lane went past its bound. Then the same through `redraft run`: hostile drafts parked in the slow lane
 * give up their places among the drafts in flight (shared/slot.ts), so the benign drafts after them in
 * the file end first. No timing is asserted: only orders, verdicts and counts.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { TOO_SLOW } from "../../shared/packs/json/regex-guard.js";
import { jsonLines, spawnCli } from "../helpers/run-cli.js";

const schemaWith = (pattern: string) => ({
  type: "object",
  properties: { v: { type: "string", pattern } },
});

/** Ten distinct patterns RE2 cannot read (no answer is shared), each backtracking for minutes on its value. */
const hostile = () =>
  Array.from({ length: 10 }, (_, i) => ({
    id: `hostile-${i}`,
    kind: "json",
    context: { schema: schemaWith(`^(?=1)(\\w|\\d)+$|^z{${i}}$`) },
    content: { v: `${"1".repeat(40)}!` },
  }));

/** Benign drafts whose patterns go to the pool too (lookarounds, a back-reference), some breaking them. */
const benign = () =>
  (
    [
      ["(?<=a)b", "ab"],
      ["^(\\w)\\1$", "zz"],
      ["(?<=a)b", "b"],
      ["^(?!x)[a-z]+$", "abc"],
      ["^(?=[a-z])[a-z]+$", "Abc"],
      ["(?<=-)[0-9]+$", "id-42"],
      ["^(?!x)[a-z]{2,}$", "xy"],
      ["^(?=[a-z])[a-z]+$", "name"],
    ] as const
  ).map(([pattern, value], i) => ({
    id: `benign-${i}`,
    kind: "json",
    context: { schema: schemaWith(pattern) },
    content: { v: value },
  }));

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "redraft-pattern-pool-"));
  vi.stubEnv("ANTHROPIC_API_KEY", "");
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(work, { recursive: true, force: true });
});

describe("the pattern pool under ten hostile drafts", () => {
  it("benign drafts submitted after ten hostile ones end before any of them, as they would alone; the quick lane grows past 2 within its bound", async () => {
    // A pool of its own: the suite shares modules between files (isolate: false), and the peaks below
    // must be this test's.
    vi.resetModules();
    const { validateDraft } = await import("../../shared/validate.js");
    const { PackRegistry } = await import("../../shared/registry.js");
    const { patternPoolStats } = await import("../../shared/packs/json/regex-guard.js");
    const registry = new PackRegistry();
    const order: string[] = [];
    const outcome = new Map<string, string>();
    const submit = (draft: { id: string }) =>
      validateDraft(draft, { registry }).then(
        (report) => {
          order.push(draft.id);
          outcome.set(draft.id, `errors ${report.counts.error}`);
        },
        (error: { code?: string; detail?: string }) => {
          order.push(draft.id);
          outcome.set(draft.id, `${error.code} ${error.detail}`);
        },
      );
    const hostileDone = hostile().map(submit);
    await Promise.all(benign().map(submit));
    await Promise.all(hostileDone);

    const firstHostile = order.findIndex((id) => id.startsWith("hostile-"));
    expect(order.slice(0, firstHostile).sort()).toEqual(
      benign()
        .map((d) => d.id)
        .sort(),
    );
    for (const { id } of hostile()) expect(outcome.get(id)).toBe(`invalid_schema ${TOO_SLOW}`);

    const stats = patternPoolStats();
    expect(stats.peaks.quick).toBeGreaterThan(2);
    expect(stats.peaks.quick).toBeLessThanOrEqual(stats.maxQuick);
    expect(stats.peaks.slow).toBeGreaterThanOrEqual(1);
    expect(stats.peaks.slow).toBeLessThanOrEqual(stats.maxSlow);
    // The slow lane keeps a core for the event loop and the quick lane (1 on a 2-core machine).
    expect(stats.maxSlow).toBeLessThan(Math.max(2, (await import("node:os")).availableParallelism()));
    expect(stats.peaks.live).toBeLessThanOrEqual(stats.maxQuick + stats.maxSlow);

    // Alone, one after the other, each benign draft gets the report it got beside the hostile ones.
    for (const draft of benign()) {
      const report = await validateDraft(draft, { registry });
      expect(`errors ${report.counts.error}`).toBe(outcome.get(draft.id));
    }
    expect(benign().map((d) => outcome.get(d.id))).toEqual([
      "errors 0",
      "errors 0",
      "errors 1",
      "errors 0",
      "errors 1",
      "errors 0",
      "errors 1",
      "errors 0",
    ]);
    // Idle workers beyond the two kept are retired (after IDLE_RETIRE_MS; waited for, not timed).
    await vi.waitFor(() => expect(patternPoolStats().live).toBeLessThanOrEqual(2), {
      timeout: 30_000,
      interval: 200,
    });
  }, 180_000);

  it("one redraft run, ten hostile drafts first in the file: the benign drafts after them end first, as in a run of their own", async () => {
    const mixedFile = join(work, "hostile-first.json");
    const benignFile = join(work, "benign.json");
    await writeFile(mixedFile, JSON.stringify([...hostile(), ...benign()]));
    await writeFile(benignFile, JSON.stringify(benign()));
    const run = async (file: string, dataDir: string) => {
      // --concurrency 4 (the default): without giving up their places, the first four hostile drafts
      // would hold every place while they wait for the slow lane, and the benign drafts with them.
      const finished = await spawnCli([
        "run",
        file,
        "--json",
        "--llm",
        "none",
        "--concurrency",
        "4",
        "--data-dir",
        dataDir,
      ]).done;
      if (finished.code !== 0 && !finished.stdout) throw new Error(`redraft run failed: ${finished.stderr}`);
      return jsonLines(finished.stdout);
    };
    const mixed = await run(mixedFile, join(work, "data-mixed"));
    const alone = await run(benignFile, join(work, "data-alone"));
    const ids = mixed.map((r) => String(r.draftId));
    expect(ids.sort()).toEqual([...hostile(), ...benign()].map((d) => d.id).sort());
    const firstHostile = mixed.findIndex((r) => String(r.draftId).startsWith("hostile-"));
    expect(firstHostile).toBe(benign().length);
    for (const line of mixed.slice(firstHostile)) {
      expect(line).toMatchObject({ status: "rejected", reason: "invalid_schema" });
      expect(String(line.message)).toContain(`${TOO_SLOW}:`);
    }
    const statuses = (lines: Record<string, unknown>[]) =>
      Object.fromEntries(
        lines.filter((r) => String(r.draftId).startsWith("benign-")).map((r) => [r.draftId, r.status]),
      );
    expect(statuses(mixed)).toEqual(statuses(alone));
  }, 240_000);
});
