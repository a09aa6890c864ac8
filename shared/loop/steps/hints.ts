import type { ValidationReport, Violation } from "../../draft.js";
import { errorRuleIds } from "./violations.js";

/** The prompt shows the last few hints; the state keeps no more than that, each clipped. */
const MAX_STATE_HINTS = 4;
const MAX_HINT_CHARS = 400;
export function keepHints(hints: readonly string[]): string[] {
  return hints
    .slice(-MAX_STATE_HINTS)
    .map((h) => (h.length > MAX_HINT_CHARS ? `${h.slice(0, MAX_HINT_CHARS)}…` : h));
}

/** The first few rule ids of a note, then how many more: the violations block lists them all. */
const NOTE_IDS = 3;
const someIds = (ids: readonly string[]): string =>
  ids.length > NOTE_IDS
    ? `${ids.slice(0, NOTE_IDS).join(", ")} and ${ids.length - NOTE_IDS} more`
    : ids.join(", ");

/** Short, bounded notes for the next prompt: what persisted, what regressed, whether we rolled back. */
export function attemptHints(
  n: number,
  failure: string | undefined,
  input: readonly Violation[],
  report: ValidationReport,
  beats: boolean,
  bestAttempt: number,
): string[] {
  if (failure)
    return [
      `Attempt ${n} could not be used (${failure.slice(0, 160)}); answer through the tool with the full content.`,
    ];
  const before = new Set(input.map((v) => v.ruleId));
  const after = errorRuleIds(report);
  const persisted = after.filter((id) => before.has(id));
  const regressed = after.filter((id) => !before.has(id));
  // The rollback note first: the prompt keeps the newest notes that fit its budget, and what did
  // not fix or broke names the rules, which says more than the rollback does.
  const notes: string[] = [];
  if (!beats) notes.push(`Attempt ${n} rolled back: restart from attempt ${bestAttempt}, try another fix.`);
  if (persisted.length) notes.push(`Attempt ${n} did not fix: ${someIds(persisted)}.`);
  if (regressed.length) notes.push(`Attempt ${n} broke rules that passed before: ${someIds(regressed)}.`);
  return notes;
}
