import { cpus } from "node:os";

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export function machine(): string {
  const list = cpus();
  const model = list[0]?.model.trim() ?? "unknown CPU";
  return `Node ${process.version} on ${process.platform}/${process.arch}, ${model} (${list.length} logical CPUs)`;
}

/** A plain-text table with right-aligned columns after the first. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

export const fmtInt = (n: number) => Math.round(n).toLocaleString("en-US");
