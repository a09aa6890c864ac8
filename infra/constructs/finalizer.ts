import { Duration } from "aws-cdk-lib";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import { type IEventBus, Rule } from "aws-cdk-lib/aws-events";
import { LambdaFunction as LambdaTarget } from "aws-cdk-lib/aws-events-targets";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import type { StateMachine } from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";
import { FinalizeEnvSchema } from "../../contracts/env.js";
import { STOPPED_STATUSES } from "../../contracts/state-names.js";
import type { EnvConfig } from "../config.js";
import { deadLetterQueue } from "./dead-letter-queue.js";
import { liveAlias, redraftFunction } from "./functions.js";

export interface FinalizerProps {
  readonly config: EnvConfig;
  /** The per-draft state machine whose stopped executions are finalized. */
  readonly stateMachine: StateMachine;
  readonly table: ITable;
  /** The project's bus, where `Draft Failed` is announced. */
  readonly bus: IEventBus;
  /**
   * How long EventBridge keeps retrying to invoke λ finalize before the event goes to the DLQ.
   * @default Duration.hours(6)
   */
  readonly maxEventAge?: Duration;
  /** @default 8 */
  readonly retryAttempts?: number;
}

/**
 * λ finalize (`functions/finalize.ts`) and what feeds it: a rule on the default bus matching the
 * state machine's `Step Functions Execution Status Change` events for FAILED, TIMED_OUT and
 * ABORTED. A run such an execution left in `draft` / `correcting` (or never registered) becomes
 * `failed` (reason `execution_failed` / `timed_out` / `aborted`), which also frees its content for
 * a resubmission, and is announced as `Draft Failed`; a run with an outcome is left alone.
 *
 * Events the rule cannot deliver and invocations that failed Lambda's own retries land in one
 * encrypted dead-letter queue of its own (alarmed on in Observability).
 */
export class Finalizer extends Construct {
  readonly function: NodejsFunction;
  readonly rule: Rule;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: FinalizerProps) {
    super(scope, id);
    const { config, stateMachine, table, bus } = props;

    this.deadLetterQueue = deadLetterQueue(this, "DeadLetters");
    this.function = redraftFunction(this, "finalize", {
      description: "Fail the run of a failed, timed-out or aborted execution, and announce it",
      timeout: Duration.seconds(30),
      envSchemas: [FinalizeEnvSchema],
      environment: {
        TABLE_NAME: table.tableName,
        EVENT_BUS_NAME: bus.eventBusName,
        RETENTION_DAYS: String(config.retentionDays),
        POWERTOOLS_SERVICE_NAME: "redraft",
        POWERTOOLS_LOG_LEVEL: config.logLevel,
      },
      config,
      deadLetterQueue: this.deadLetterQueue,
    });
    // Reads the run, fails it conditionally, or creates it when the execution never registered it.
    this.function.addToRolePolicy(
      new PolicyStatement({
        actions: ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
        resources: [table.tableArn],
      }),
    );
    bus.grantPutEventsTo(this.function);

    this.rule = new Rule(this, "ExecutionStopped", {
      description: "Finalize the run of a failed, timed-out or aborted execution (λ finalize)",
      eventPattern: {
        source: ["aws.states"],
        detailType: ["Step Functions Execution Status Change"],
        detail: { stateMachineArn: [stateMachine.stateMachineArn], status: [...STOPPED_STATUSES] },
      },
      targets: [
        new LambdaTarget(liveAlias(this.function), {
          deadLetterQueue: this.deadLetterQueue,
          retryAttempts: props.retryAttempts ?? 8,
          maxEventAge: props.maxEventAge ?? Duration.hours(6),
        }),
      ],
    });
  }
}
