import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { OUTCOME_FIELDS, type OutcomeField, RUN_KEY_PREFIX } from "../contracts/table.js";
import type { RunOutcome, RunStatus, RunStore } from "../shared/store/types.js";
import { RunStatusSchema } from "../shared/store/types.js";
import { ENTERED_TIME_MARKER, type Integrations } from "./asl-interpreter.js";

/** A RunStore that makes the status UpdateItem's conditional move in one atomic write (SqliteRunStore). */
interface FinishingStore extends RunStore {
  finishActive(
    runId: string,
    status: RunStatus,
    from: readonly string[],
    at: string,
    fields: Partial<RunOutcome>,
  ): Promise<boolean>;
}
const canFinish = (runs: RunStore): runs is FinishingStore =>
  typeof (runs as Partial<FinishingStore>).finishActive === "function";

/** An error named as Step Functions names a DynamoDB error, for the state's Retry and Catch. */
function dynamoError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = `DynamoDB.${name}`;
  return error;
}

const STRUCTURAL = new Set(["status", "updatedAt", "transitions"]);

/**
 * The state machine's status UpdateItem (Mark*, Record*, built by `statusUpdate` in
 * contracts/table.ts) against a RunStore that is not DynamoDB: the run moves to `:status` with
 * the outcome fields the update sets, under the same condition (the run exists and is not in that
 * status yet, or is in one of the `:from…` statuses the update names); when it fails, the error is
 * DynamoDB's `ConditionalCheckFailedException`, as the state's Catch expects. The one adapter of the
 * embedded store's executions, of runs and of batch items alike, and of the in-process `correctDraft`.
 */
export function statusUpdateIn(
  runs: RunStore,
  now: () => Date = () => new Date(),
): Integrations["updateItem"] {
  return async (input) => {
    const at = now().toISOString();
    // Step Functions fills `$$.State.EnteredTime` per state; aws-local-stepfunctions has one context
    // per execution, so the runtime passes a marker there and stamps the real time here.
    const text = (value: AttributeValue | undefined) =>
      value && "S" in value && value.S !== undefined
        ? value.S.replaceAll(ENTERED_TIME_MARKER, at)
        : undefined;
    const values = input.ExpressionAttributeValues ?? {};
    const names = input.ExpressionAttributeNames ?? {};
    const runId = text(input.Key?.pk)?.slice(RUN_KEY_PREFIX.length) ?? "";
    const status = RunStatusSchema.parse(text(values[":status"]));
    const fields: Partial<RunOutcome> = {};
    for (const [, name, value] of (input.UpdateExpression ?? "").matchAll(/(#\w+) = (:\w+)/g)) {
      const attribute = names[name ?? ""] as OutcomeField | undefined;
      const set = text(values[value ?? ""]);
      if (attribute && !STRUCTURAL.has(attribute) && OUTCOME_FIELDS.includes(attribute) && set !== undefined)
        Object.assign(fields, { [attribute]: set });
    }
    const from = Object.entries(values)
      .filter(([key]) => /^:from\d+$/.test(key))
      .flatMap(([, value]) => text(value) ?? []);
    const moved = canFinish(runs)
      ? await runs.finishActive(runId, status, from, at, fields)
      : await (async () => {
          const run = await runs.getRun(runId);
          if (!run || run.status === status || (from.length > 0 && !from.includes(run.status))) return false;
          await runs.setStatus(runId, status, at, fields);
          return true;
        })();
    if (!moved) throw dynamoError("ConditionalCheckFailedException", "The conditional request failed");
    return {};
  };
}
