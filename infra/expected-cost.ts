import { readFileSync } from "node:fs";
import { CountsFileSchema } from "../shared/plan/counts.js";
import { plan } from "../shared/plan/planner.js";
import { PricesFileSchema } from "../shared/plan/prices.js";

const DATA = new URL("../shared/plan/data/", import.meta.url);
const read = (file: string): unknown => JSON.parse(readFileSync(new URL(file, DATA), "utf8"));

/**
 * The model spend an environment is expected to have in an hour at its expected daily volume: the
 * plan's model cost per draft (`redraft plan --env <name>`, the same committed counts and prices)
 * × the day's drafts ÷ 24. The hourly-cost alarm fires at a multiple of it, so the threshold grows
 * with the volume the environment is run for instead of paging at a fixed sum a busy hour passes.
 */
export function expectedHourlyModelCostUsd(envName: string, draftsPerDay: number): number {
  const p = plan(
    { draftsPerDay, env: envName },
    CountsFileSchema.parse(read("counts.json")),
    PricesFileSchema.parse(read("prices.json")),
  );
  const model = p.components
    .filter((c) => c.name.startsWith("Model ("))
    .reduce((sum, c) => sum + c.costPerDraftUsd, 0);
  return (model * draftsPerDay) / 24;
}
