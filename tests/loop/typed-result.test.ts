/**
 * `correctDraft(draft, { schema })` with a zod schema: the result's `finalDraft.content` is typed from
 * the schema once the run is validated, and the schema is enforced at run time, so the type holds.
 * The type-level checks (expectTypeOf, @ts-expect-error) are checked by `npx tsc --noEmit`, which
 * covers tests/ under the project's strict settings.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import * as z from "zod";
import { correctDraft } from "../../local/in-process.js";
import type { RunResult } from "../../shared/loop/run.js";
import { ContentSchemaMismatchError, type TypedRunResult } from "../../shared/loop/schema-option.js";
import { answer, makeDeps } from "./harness.js";

const Point = z.object({
  label: z.string().min(1),
  point: z.tuple([z.number(), z.number()]),
  tags: z.array(z.enum(["a", "b"])).optional(),
});
type Point = z.infer<typeof Point>;

describe("correctDraft with a zod schema", () => {
  it("checks the content against z.toJSONSchema(schema), corrects it, and types the validated content", async () => {
    const { deps, model } = makeDeps([answer("p1", { label: "origin", point: [0, 0] })]);
    // No kind: a draft with a schema is a json draft.
    const result = await correctDraft(
      { id: "p1", content: { label: "origin", point: ["0", 0] } },
      { ...deps, schema: Point },
    );
    expect(result).toMatchObject({ status: "validated", attempts: 1 });
    expect(result.initialViolations.some((v) => v.source === "schema" && v.path === "/point/0")).toBe(true);
    // The violation the converted schema found sits at a path, so the model is asked for a patch
    // over it (field-level correction), the schema's violation named in the prompt.
    const request = model?.requests[0];
    expect(request?.tool?.inputSchema).toMatchObject({ properties: { patch: { type: "array" } } });
    expect(JSON.stringify(request?.user)).toContain("/point/0");
    if (result.status !== "validated") throw new Error(`expected validated, got ${result.status}`);
    expectTypeOf(result.finalDraft.content).toEqualTypeOf<Point>();
    const [x, y] = result.finalDraft.content.point;
    expect(x + y).toBe(0);
    expect(result.finalDraft.content.label.toUpperCase()).toBe("ORIGIN");
    expect(result.finalDraft.kind).toBe("json");
  });

  it("leaves the content unknown on a run that is not validated, where it does not conform", async () => {
    const wrong = { label: "", point: [0] };
    const { deps } = makeDeps([answer("p2", wrong), answer("p2", wrong)]);
    const result = await correctDraft({ id: "p2", kind: "json", content: wrong }, { ...deps, schema: Point });
    expect(result.status).toBe("needs_manual_review");
    expect(result.finalDraft?.content).toEqual(wrong);
    if (result.status === "validated") throw new Error("a non-conforming draft was validated");
    expectTypeOf(result.status).toEqualTypeOf<Exclude<RunResult["status"], "validated">>();
    expectTypeOf(result.finalDraft).toEqualTypeOf<RunResult["finalDraft"]>();
    expectTypeOf<NonNullable<typeof result.finalDraft>["content"]>().toBeUnknown();
  });

  it("enforces the JSON Schema's strictness: a key outside the shape never reaches the typed content", async () => {
    const { deps } = makeDeps([answer("p3", { label: "a", point: [1, 2] })]);
    const result = await correctDraft(
      { id: "p3", content: { label: "a", point: [1, 2], extra: true } },
      { ...deps, schema: Point },
    );
    expect(result.status).toBe("validated");
    expect(result.finalDraft?.content).toEqual({ label: "a", point: [1, 2] });
  });

  it("throws ContentSchemaMismatchError when a check JSON Schema cannot say (refine) refuses validated content", async () => {
    const Even = z.object({ n: z.number().refine((n) => n % 2 === 0, "must be even") });
    const { deps, runs } = makeDeps([]);
    const error = await correctDraft({ id: "p4", content: { n: 3 } }, { ...deps, schema: Even }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ContentSchemaMismatchError);
    const mismatch = error as ContentSchemaMismatchError;
    expect(mismatch.code).toBe("schema_mismatch");
    expect(mismatch.message).toMatch(/must be even/);
    expect(mismatch.result.status).toBe("validated");
    expect((await runs.getRun(mismatch.result.runId))?.status).toBe("validated");
  });

  it("refuses, before anything runs, what cannot be combined with the schema, naming the fix", async () => {
    const { deps, runs } = makeDeps([]);
    const cases: [unknown, z.ZodType, RegExp][] = [
      [{ id: "m", kind: "mcq", content: {} }, Point, /kind is "mcq".*set it to "json"/],
      [{ id: "c", content: {}, context: { schema: { type: "object" } } }, Point, /give the schema once/],
      [
        { id: "t", content: {} },
        z.object({ n: z.string().transform(Number) }),
        /Transforms cannot be represented/,
      ],
      [{ id: "d", content: {} }, z.object({ at: z.date() }), /Date cannot be represented/],
    ];
    for (const [draft, schema, message] of cases) {
      const error = await correctDraft(draft, { ...deps, schema }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ name: "CorrectDraftUsageError" });
      expect((error as Error).message).toMatch(message);
    }
    expect(await runs.listRuns()).toEqual([]);
  });

  it("keeps the content unknown without a schema, and the typed result assignable to RunResult", () => {
    const { deps } = makeDeps([]);
    // Never called: their return types are what is checked.
    const withoutSchema = () => correctDraft({}, deps);
    const withSchema = () => correctDraft({}, { ...deps, schema: Point });
    expectTypeOf<Awaited<ReturnType<typeof withoutSchema>>>().toEqualTypeOf<RunResult>();
    expectTypeOf<Awaited<ReturnType<typeof withSchema>>>().toEqualTypeOf<TypedRunResult<Point>>();
    expectTypeOf<TypedRunResult<Point>>().toMatchTypeOf<RunResult>();
    const untyped = (result: RunResult) => {
      if (result.status === "validated" && result.finalDraft) {
        // @ts-expect-error without a schema the content stays unknown
        result.finalDraft.content.label;
      }
    };
    const typed = (result: TypedRunResult<Point>) => {
      // @ts-expect-error the content is only typed once the status says validated
      result.finalDraft?.content.label;
      if (result.status === "validated") return result.finalDraft.content.label;
      return undefined;
    };
    expect([untyped, typed, withoutSchema, withSchema].map((f) => typeof f)).toEqual(
      Array(4).fill("function"),
    );
  });
});
