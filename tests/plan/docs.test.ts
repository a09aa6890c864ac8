import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPlanData } from "../../cli/plan.js";
import { capacityDoc } from "../../scripts/plan/capacity-doc.js";

const ROOT = join(import.meta.dirname, "..", "..");

describe("docs/CAPACITY.md", () => {
  it("is what npm run plan:docs writes from the committed counts and prices", async () => {
    const { counts, prices } = await loadPlanData();
    expect(await readFile(join(ROOT, "docs", "CAPACITY.md"), "utf8")).toBe(capacityDoc(counts, prices));
  });

  it("is linked from the README and the design document", async () => {
    for (const file of ["README.md", "docs/DESIGN.md"])
      expect(await readFile(join(ROOT, file), "utf8")).toMatch(/CAPACITY\.md/);
  });
});
