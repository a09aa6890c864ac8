import { type CountsFile, CountsFileSchema } from "../../shared/plan/counts.js";
import { environmentSnapshots } from "./environments.js";
import { measureCorpus } from "./measure.js";

export const COUNTS_FILE = new URL("../../shared/plan/data/counts.json", import.meta.url);

/** The counts file as `npm run plan:counts` writes it: measured now, checked against its schema. */
export async function countsFile(): Promise<CountsFile> {
  const { drafts, paths } = await measureCorpus();
  return CountsFileSchema.parse({
    generatedBy:
      "npm run plan:counts (scripts/plan-counts.ts): the committed state machine executed over examples/drafts with examples/example.cassette.json; do not edit",
    corpus: drafts,
    paths,
    environments: environmentSnapshots(),
  });
}

export async function countsFileText(): Promise<string> {
  return `${JSON.stringify(await countsFile(), null, 2)}\n`;
}
