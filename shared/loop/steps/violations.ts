import type { ValidationReport, Violation } from "../../draft.js";

/** The violations of a report that count: only error severity ever triggers a correction. */
export const errorsOf = (report: ValidationReport): Violation[] =>
  report.violations.filter((v) => v.severity === "error");

/** The distinct rules a report fails with error severity, in the order they were found. */
export const errorRuleIds = (report: ValidationReport): string[] => [
  ...new Set(errorsOf(report).map((v) => v.ruleId)),
];
