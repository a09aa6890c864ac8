import Table from "cli-table3";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { drawTable } from "../../cli/output.js";

/** The same table, drawn by cli-table3 as renderTable drew every table before it drew plain ones itself. */
function cliTable3(heads: string[], rows: string[][], widths: number[], color: boolean): string {
  const bold = (text: string) => (color ? `\x1b[1m${text}\x1b[22m` : text);
  const table = new Table({ head: heads.map(bold), colWidths: widths, style: { head: [], border: [] } });
  for (const row of rows) table.push(row);
  return table.toString();
}

const plainText = fc.stringMatching(/^[ -~]{0,14}$/);
/** Cells of plain ASCII, some of several lines, some longer than their column. */
const plainCell = fc.array(plainText, { minLength: 1, maxLength: 3 }).map((lines) => lines.join("\n"));

describe("drawTable", () => {
  it("draws a table of plain ASCII exactly as cli-table3 draws it", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }).chain((columns) =>
          fc.record({
            heads: fc.array(fc.stringMatching(/^[a-z]{1,8}$/), { minLength: columns, maxLength: columns }),
            extra: fc.array(fc.integer({ min: 0, max: 10 }), { minLength: columns, maxLength: columns }),
            rows: fc.array(fc.array(plainCell, { minLength: columns, maxLength: columns }), { maxLength: 6 }),
            color: fc.boolean(),
          }),
        ),
        ({ heads, extra, rows, color }) => {
          // A column is at least as wide as its heading and padding, as renderTable makes it.
          const widths = heads.map((h, i) => h.length + 2 + (extra[i] ?? 0));
          expect(drawTable(heads, rows, widths, { color })).toBe(cliTable3(heads, rows, widths, color));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("leaves text that is not plain ASCII to cli-table3, which measures wide characters", () => {
    const heads = ["draft", "status"];
    const rows = [["質問-1 🙂", "validated"]];
    const widths = [10, 11];
    const drawn = drawTable(heads, rows, widths, { color: false });
    expect(drawn).toBe(cliTable3(heads, rows, widths, false));
    // Ideographs and the emoji count twice: the cell is cut to its column's width on a terminal.
    expect(drawn.split("\n")[3]).toBe("│ 質問-1 … │ validated │");
  });
});
