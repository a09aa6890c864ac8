import { createRequire } from "node:module";

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
  /** A shorter form of a cell, used when the table does not fit once the droppable columns are gone. */
  short?: (cell: string) => string;
  /** The SGR colour code of a cell on a terminal (e.g. `32` for green), or undefined for none. */
  paint?: (cell: string) => number | undefined;
}

/** How a table treats cells too wide for their column. */
export interface TableOptions {
  /** Each row on one line: a cell too wide is cut with an ellipsis rather than wrapped. */
  oneLine?: boolean;
  /** Columns dropped, in this order, only when the table fits no other way (not even shrunk). */
  lastDropped?: readonly string[];
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
 * A table that fits `style.width`: columns are dropped in the order `dropOrder` names until the
 * rest fits at their natural width; if it still does not, the columns that have a short form use
 * it, then the `lastDropped` columns go while even the narrowest table would not fit, and then the
 * wrappable columns shrink (down to their `wrapTo`), wrapping their text, or, with `oneLine`,
 * cutting it with an ellipsis. Headers are bold on a terminal and plain otherwise; cells
 * with a `paint` colour are coloured on a terminal; nothing is coloured when colour is off.
 */
export function renderTable(
  columns: readonly Column[],
  rows: readonly (readonly Cell[])[],
  style: OutputStyle,
  dropOrder: readonly string[] = [],
  options: TableOptions = {},
): string {
  // Padding of one space either side, and one border character per column plus the last.
  const naturalOf = (cells: readonly (readonly Cell[])[]) =>
    columns.map((c, i) => Math.max(c.head.length, ...cells.map((r) => cellWidth(r[i] ?? ""))) + 2);
  let natural = naturalOf(rows);
  let kept = columns.map((_, i) => i);
  const fits = (widths: readonly number[]) =>
    kept.reduce((sum, i) => sum + (widths[i] ?? 0), 0) + kept.length + 1 <= style.width;
  for (const head of dropOrder) {
    if (fits(natural)) break;
    const index = columns.findIndex((c) => c.head === head);
    if (kept.length > 1) kept = kept.filter((i) => i !== index);
  }
  let cells = rows;
  if (!fits(natural) && columns.some((c) => c.short)) {
    cells = rows.map((row) => row.map((cell, i) => columns[i]?.short?.(String(cell)) ?? cell));
    natural = naturalOf(cells);
  }
  const least = columns.map((c, i) =>
    c.wrapTo === undefined
      ? (natural[i] ?? 0)
      : Math.min(natural[i] ?? 0, Math.max(c.wrapTo, c.head.length) + 2),
  );
  for (const head of options.lastDropped ?? []) {
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
  const paints = kept.map((i) => columns[i]?.paint);
  return drawTable(
    kept.map((i) => columns[i]?.head ?? ""),
    // Two characters of each width are padding.
    cells.map((row) =>
      kept.map((i) => {
        const text = String(row[i] ?? "");
        return options.oneLine ? text.replaceAll("\n", " ") : wrapText(text, (widths[i] ?? 3) - 2);
      }),
    ),
    kept.map((i) => widths[i] ?? 0),
    style,
    (column, cell) => (style.color ? paints[column]?.(cell) : undefined),
    // A row on one line needs no rule to tell it from the next.
    { rowRules: !options.oneLine },
  );
}

const BOLD_ON = "\x1b[1m";
const BOLD_OFF = "\x1b[22m";
/** The default foreground colour again, after a painted cell. */
const COLOR_OFF = "\x1b[39m";
/** Printable ASCII and line breaks: text whose width on a terminal is its length. */
const PLAIN = /^[\x20-\x7e\n]*$/;
const PLAIN_LINE = /^[\x20-\x7e]*$/;

/**
 * Draws a table with box characters, a separator under the heading and between rows, one space of
 * padding either side of each cell, and each line of a cell cut with an ellipsis when it is wider
 * than its column: cli-table3's layout. Tables of plain ASCII (nearly all of them: ids, statuses,
 * counts, times) are drawn here directly, as cli-table3 would draw them (tests/cli/output.test.ts
 * compares the two); anything else (wide characters, emoji, escape codes in cells) goes to
 * cli-table3, which measures such text. cli-table3 measures every cell several times over, which
 * made it most of the time `redraft runs` took to draw 50 runs, and it is loaded only when needed.
 */
export function drawTable(
  heads: readonly string[],
  rows: readonly (readonly string[])[],
  widths: readonly number[],
  style: Pick<OutputStyle, "color">,
  paint: (column: number, cell: string) => number | undefined = () => undefined,
  { rowRules = true }: { rowRules?: boolean } = {},
): string {
  const coloured = (column: number, cell: string, text: string) => {
    const code = paint(column, cell);
    return code === undefined ? text : `\x1b[${code}m${text}${COLOR_OFF}`;
  };
  // Bold is applied here, not by cli-table3's colour library, which decides on its own from the
  // environment at import (and turns colour off under CI=true even when we write to a terminal).
  const bold = (text: string) => (style.color ? `${BOLD_ON}${text}${BOLD_OFF}` : text);
  const plain =
    heads.every((h, i) => PLAIN_LINE.test(h) && h.length <= (widths[i] ?? 0) - 2) &&
    rows.every((row) => row.every((cell) => PLAIN.test(cell)));
  if (!plain) {
    const Table = createRequire(import.meta.url)("cli-table3") as typeof import("cli-table3");
    const table = new Table({
      head: heads.map(bold),
      colWidths: [...widths],
      style: { head: [], border: [] },
      ...(!rowRules && { chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" } }),
    });
    for (const row of rows) table.push(row.map((cell, i) => coloured(i, cell, cell)));
    return table.toString();
  }
  const rule = (left: string, middle: string, right: string) =>
    `${left}${widths.map((w) => "─".repeat(w)).join(middle)}${right}`;
  const cut = (line: string, room: number) => (line.length > room ? `${line.slice(0, room - 1)}…` : line);
  const draw = (cells: readonly string[]) => {
    const lines = cells.map((cell) => cell.split("\n"));
    const height = Math.max(1, ...lines.map((l) => l.length));
    const out: string[] = [];
    for (let n = 0; n < height; n++)
      out.push(
        `│${widths
          .map((w, i) => {
            const text = cut(lines[i]?.[n] ?? "", w - 2);
            return ` ${coloured(i, cells[i] ?? "", text)}${" ".repeat(w - 2 - text.length)} `;
          })
          .join("│")}│`,
      );
    return out;
  };
  // A heading is bold around its own text; the padding after it is not (cli-table3 pads the bold text).
  const head = `│${widths.map((w, i) => ` ${bold(heads[i] ?? "")}${" ".repeat(w - 2 - (heads[i] ?? "").length)} `).join("│")}│`;
  const out = [rule("┌", "┬", "┐"), head];
  rows.forEach((row, n) => {
    if (rowRules || n === 0) out.push(rule("├", "┼", "┤"));
    out.push(...draw(row));
  });
  out.push(rule("└", "┴", "┘"));
  return out.join("\n");
}
