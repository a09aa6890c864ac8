/**
 * `npm run plan:docs`: writes docs/CAPACITY.md, the plan for 10,000, 1,000,000 and 10,000,000 drafts a
 * day in each environment and the Standard-versus-Express comparison, from the committed counts and
 * prices (scripts/plan/capacity-doc.ts). `--check` fails when the committed page is stale instead.
 */
import { readFile, writeFile } from "node:fs/promises";
import { loadPlanData } from "../cli/plan.js";
import { capacityDoc } from "./plan/capacity-doc.js";

const PAGE = new URL("../docs/CAPACITY.md", import.meta.url);
const { counts, prices } = await loadPlanData();
const text = capacityDoc(counts, prices);
if (process.argv.includes("--check")) {
  const committed = await readFile(PAGE, "utf8").catch(() => "");
  if (committed !== text) {
    process.stderr.write("docs/CAPACITY.md is stale: run npm run plan:docs\n");
    process.exit(1);
  }
} else {
  await writeFile(PAGE, text);
  process.stderr.write("wrote docs/CAPACITY.md\n");
}
