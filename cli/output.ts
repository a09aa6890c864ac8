import Table from "cli-table3";

/** The widest a table may be: a terminal narrower than this gets its own width. */
const MAX_TABLE_WIDTH = 100;

/** What a stream's output may use: colour or not, and how wide a table may be. */
export interface OutputStyle {
  color: boolean;
  width: number;
}

/**
 * Colour only for a terminal, never when `NO_COLOR` is set (no-color.org: any non-empty value);
 * `FORCE_COLOR` (other than `0`) asks for it anyway, as in Node and chalk.
 */
function colorWanted(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "") return env.FORCE_COLOR !== "0";
  return stream.isTTY === true;
}

/** The style for stdout as it is now: a pipe or a file gets no colour and 100 columns. */
export function stdoutStyle(): OutputStyle {
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  return {
    color: colorWanted(process.stdout),
    width: Math.min(columns && columns > 20 ? columns : MAX_TABLE_WIDTH, MAX_TABLE_WIDTH),
  };
}

/** One column: its heading, and, for a column that may wrap, the narrowest it may become. */
export interface Column {
  head: string;
  /** Characters of content the column keeps at least when the table must shrink; absent = never wraps. */
  wrapTo?: number;
}

type Cell = string | number;

/**
 * Text broken into lines of at most `width` characters: at spaces where it can, inside a word only
 * when the word alone is longer than the line (an id, a path), so nothing is cut off.
 */
export function wrapText(text: string, width: number): string {
  if (width < 1) return text;
  const lines: string[] = [];
  for (const paragraph of text.split("\n")) {
    let line = "";
    for (const word of paragraph.split(" ")) {
      let rest = word;
      const candidate = line === "" ? rest : `${line} ${rest}`;
      if (candidate.length <= width) {
        line = candidate;
        continue;
      }
      if (line !== "") lines.push(line);
      while (rest.length > width) {
        lines.push(rest.slice(0, width));
        rest = rest.slice(width);
      }
      line = rest;
    }
    lines.push(line);
  }
  return lines.join("\n");
}

const cellWidth = (cell: Cell) =>
  Math.max(
    ...String(cell)
      .split("\n")
      .map((line) => line.length),
  );

/**
 * A table that fits `style.width`: wrappable columns shrink first (down to their `wrapTo`), then
 * columns are dropped in the order `dropOrder` names until the rest fits. Headers are bold on a
 * terminal and plain otherwise; borders are grey on a terminal; nothing is coloured when colour is off.
 */
export function renderTable(
  columns: readonly Column[],
  rows: readonly (readonly Cell[])[],
  style: OutputStyle,
  dropOrder: readonly string[] = [],
): string {
  // Padding of one space either side, and one border character per column plus the last.
  const natural = columns.map(
    (c, i) => Math.max(c.head.length, ...rows.map((r) => cellWidth(r[i] ?? ""))) + 2,
  );
  const least = columns.map((c, i) =>
    c.wrapTo === undefined
      ? (natural[i] ?? 0)
      : Math.min(natural[i] ?? 0, Math.max(c.wrapTo, c.head.length) + 2),
  );
  let kept = columns.map((_, i) => i);
  const fits = (widths: readonly number[]) =>
    kept.reduce((sum, i) => sum + (widths[i] ?? 0), 0) + kept.length + 1 <= style.width;
  for (const head of dropOrder) {
    if (fits(least)) break;
    const index = columns.findIndex((c) => c.head === head);
    if (kept.length > 1) kept = kept.filter((i) => i !== index);
  }
  const widths = [...natural];
  if (!fits(natural)) {
    // Shrink the wrappable columns, widest first, one character at a time, until the table fits.
    while (!fits(widths)) {
      const widest = kept
        .filter((i) => (widths[i] ?? 0) > (least[i] ?? 0))
        .sort((a, b) => (widths[b] ?? 0) - (widths[a] ?? 0))[0];
      if (widest === undefined) break;
      widths[widest] = (widths[widest] ?? 0) - 1;
    }
  }
  // Bold is applied here, not by cli-table3's colour library, which decides on its own from the
  // environment at import (and turns colour off under CI=true even when we write to a terminal).
  const bold = (text: string) => (style.color ? `\x1b[1m${text}\x1b[22m` : text);
  const table = new Table({
    head: kept.map((i) => bold(columns[i]?.head ?? "")),
    colWidths: kept.map((i) => widths[i] ?? 0),
    style: { head: [], border: [] },
  });
  // Two characters of each width are padding.
  for (const row of rows) table.push(kept.map((i) => wrapText(String(row[i] ?? ""), (widths[i] ?? 3) - 2)));
  return table.toString();
}
