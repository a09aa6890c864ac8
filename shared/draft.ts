import * as z from "zod";

/** The severities a check can report. Only `error` ever triggers a correction. */
export const SeveritySchema = z.enum(["error", "warning", "info"]);
export type Severity = z.infer<typeof SeveritySchema>;

/** Where a violation came from: a pack rule, a JSON Schema, a test run, or the LLM judge. */
const ViolationSourceSchema = z.enum(["rule", "schema", "test", "judge"]);
export type ViolationSource = z.infer<typeof ViolationSourceSchema>;

export const ViolationSchema = z.object({
  ruleId: z.string().min(1),
  severity: SeveritySchema,
  message: z.string(),
  /** JSON pointer into the draft's content (`/options/0/text`), when the violation is about one place. */
  path: z.string().optional(),
  /** What to change, in words a model or a person can act on. */
  suggestion: z.string().optional(),
  source: ViolationSourceSchema,
  confidence: z.number().min(0).max(1).optional(),
});
export type Violation = z.infer<typeof ViolationSchema>;

/** Per-draft loop settings; the deployment caps them (see `LoopLimits`). */
const DraftOptionsSchema = z
  .object({
    maxAttempts: z.number().int().min(0).max(10).optional(),
    maxLogicAttempts: z.number().int().min(0).max(5).optional(),
    breakerAfter: z.number().int().min(1).max(10).optional(),
    /** Deprecated name of `breakerAfter`, still accepted (with a DeprecationWarning); `breakerAfter` wins. */
    breakerThreshold: z.number().int().min(1).max(10).optional(),
    stuckAfter: z.number().int().min(1).max(10).optional(),
    maxTokens: z.number().int().positive().optional(),
    maxCostUsd: z.number().positive().optional(),
    judge: z.boolean().optional(),
    skipJudge: z.boolean().optional(),
    acceptFindings: z.array(z.string()).optional(),
  })
  .strict();
export type DraftOptions = z.infer<typeof DraftOptionsSchema>;

/** A draft written by a language model, as docs/DESIGN.md §2 defines it. */
export const DraftSchema = z
  .object({
    id: z
      .string()
      .min(1, "must be a non-empty string")
      .max(256)
      .regex(/^[A-Za-z0-9._:@-]+$/, "may hold only letters, digits and . _ : @ -"),
    kind: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-z][a-z0-9_-]*$/, "must be a lower-case pack name such as mcq, json or code"),
    /** What gets checked and corrected. Its shape is the pack's business. */
    content: z.unknown(),
    /** What the checks need: the generation prompt or intent, a JSON Schema, personas… */
    context: z.record(z.string(), z.unknown()).optional(),
    /** Passed through untouched; a correction can never change it. */
    metadata: z.record(z.string(), z.unknown()).optional(),
    options: DraftOptionsSchema.optional(),
  })
  .strict()
  .refine((d) => d.content !== undefined && d.content !== null, {
    path: ["content"],
    message: "is required",
  });
export type Draft = z.infer<typeof DraftSchema>;

/** One change that deterministic repair made, recorded so that no repair is silent. */
export const RepairSchema = z.object({
  ruleId: z.string(),
  action: z.enum(["remove", "trim", "replace"]),
  path: z.string(),
  message: z.string(),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
});
export type Repair = z.infer<typeof RepairSchema>;

const SeverityCountsSchema = z.object({
  error: z.number().int().nonnegative(),
  warning: z.number().int().nonnegative(),
  info: z.number().int().nonnegative(),
});
export type SeverityCounts = z.infer<typeof SeverityCountsSchema>;

const ValidationReportSchema = z.object({
  violations: z.array(ViolationSchema),
  counts: SeverityCountsSchema,
  /** Ids of the rules that ran. */
  rulesApplied: z.array(z.string()),
  /** No error-severity violation. */
  passed: z.boolean(),
  /** Proportional quality in [0,1]; 3 errors over 200 checked fields is ~0.985, never a 1/0 cliff. */
  score: z.number().min(0).max(1),
  repairs: z.array(RepairSchema),
  /** The violations of the content as it came, before the repairs; present only when something was repaired. */
  beforeRepair: z.array(ViolationSchema).optional(),
});
export type ValidationReport = z.infer<typeof ValidationReportSchema>;

/** Formats a zod error as one line per problem, each naming the field: `content.options[2].key: Required`. */
export function describeZodError(error: z.ZodError, root = ""): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))]
        .join("")
        .replace(/^\./, "");
      return `${path || "(draft)"}: ${issue.message}`;
    })
    .join("; ");
}

export function countSeverities(violations: readonly Violation[]): SeverityCounts {
  const counts = { error: 0, warning: 0, info: 0 };
  for (const v of violations) counts[v.severity] += 1;
  return counts;
}
