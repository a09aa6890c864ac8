import type { Context } from "aws-lambda";
import type * as z from "zod";
import type { LoopState } from "../../shared/loop/state.js";
import type { LoopDeps } from "../../shared/loop/steps/deps.js";
import { logger, metrics, tracer, withRunKeys } from "./observability.js";

export type DepsProvider = () => Promise<LoopDeps>;

/**
 * Wraps one loop step as a Lambda handler: parse the event with zod, tag logs with the run,
 * call the core, flush metrics. Errors keep their `name`, which is what the state machine's
 * Retry and Catch match on.
 */
export function stepHandler<E>(
  step: string,
  schema: z.ZodType<E>,
  run: (event: E, deps: LoopDeps) => Promise<LoopState>,
  getDeps: DepsProvider,
): (event: unknown, context?: Context) => Promise<LoopState> {
  return async (event, context) => {
    if (context) logger.addContext(context);
    const subsegment = tracer.getSegment()?.addNewSubsegment(`redraft.${step}`);
    try {
      const parsed = schema.parse(event);
      if (typeof parsed === "object" && parsed && "runId" in parsed) {
        logger.appendKeys({ runId: (parsed as { runId: string }).runId });
      }
      const result = await run(parsed, await getDeps());
      withRunKeys(result);
      logger.info(`${step} done`, {
        decision: result.decision,
        verdict: result.verdict,
        counters: result.counters,
      });
      return result;
    } catch (error) {
      logger.error(`${step} failed`, error as Error);
      throw error;
    } finally {
      subsegment?.close();
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
      logger.resetKeys();
    }
  };
}
