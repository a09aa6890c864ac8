import { ArnFormat, Duration, Stack } from "aws-cdk-lib";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import {
  IntegrationPattern,
  JitterType,
  JsonPath,
  Pass,
  type RetryProps,
  type StateMachine,
  TaskInput,
  Timeout,
} from "aws-cdk-lib/aws-stepfunctions";
import {
  StepFunctionsStartExecution,
  type StepFunctionsStartExecutionProps,
} from "aws-cdk-lib/aws-stepfunctions-tasks";
import type { Construct } from "constructs";
import { BATCH_ID_PREFIX } from "../../shared/batch/record.js";

/**
 * Starting a child: throttled or refused for now by Step Functions' own limits. Long, jittered
 * retries: a batch of thousands pushes on the account's StartExecution rate.
 */
const CHILD_START_RETRY: RetryProps = {
  errors: ["StepFunctions.ExecutionLimitExceededException", "StepFunctions.AWSStepFunctionsException"],
  interval: Duration.seconds(5),
  backoffRate: 2,
  maxAttempts: 6,
  maxDelay: Duration.seconds(120),
  jitterStrategy: JitterType.FULL,
};

export interface ChildExecutionProps {
  readonly perDraft: StateMachine;
  readonly comment: string;
  /** The child's name, deterministic so that a retried or resumed item never runs twice. */
  readonly name: string;
  /** The Pass state that stands for a child that already exists, and what it keeps of the item. */
  readonly alreadyRan: {
    readonly id: string;
    readonly comment: string;
    readonly keep: Record<string, string>;
  };
  readonly executionTimeoutMinutes: number;
}

/**
 * The executions a batch's children run as: the per-draft state machine's, named `<batchId>-<line>`
 * (`childRunId`), every batch id starting with {@link BATCH_ID_PREFIX}. Nothing else the per-draft
 * machine runs (an upload's `u-…`, an event's `e-…`) can be described or stopped by a batch.
 */
function childExecutionsArn(scope: Construct, perDraft: StateMachine): string {
  return Stack.of(scope).formatArn({
    service: "states",
    resource: "execution",
    resourceName: `${perDraft.stateMachineName}:${BATCH_ID_PREFIX}*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

/**
 * StartExecution `.sync:2` with the role it needs and no more: CDK's own grant lets Describe and Stop
 * reach every execution whose state machine name starts with the child's (`execution:<name>*`,
 * which also matches `<name>-batches`); here they reach only this batch machine's children.
 */
class ChildStartExecution extends StepFunctionsStartExecution {
  declare protected readonly taskPolicies?: PolicyStatement[];

  constructor(
    scope: Construct,
    id: string,
    props: StepFunctionsStartExecutionProps & { readonly stateMachine: StateMachine },
  ) {
    super(scope, id, props);
    const stack = Stack.of(scope);
    this.taskPolicies = [
      new PolicyStatement({
        actions: ["states:StartExecution"],
        resources: [props.stateMachine.stateMachineArn],
      }),
      new PolicyStatement({
        actions: ["states:DescribeExecution", "states:StopExecution"],
        resources: [childExecutionsArn(scope, props.stateMachine)],
      }),
      // `.sync` learns that a child ended from Step Functions' own managed rule.
      new PolicyStatement({
        actions: ["events:PutTargets", "events:PutRule", "events:DescribeRule"],
        resources: [
          stack.formatArn({
            service: "events",
            resource: "rule",
            resourceName: "StepFunctionsGetEventsForStepFunctionsExecutionRule",
          }),
        ],
      }),
    ];
  }
}

/**
 * One batch item as a child execution of the per-draft state machine, waited for (`.sync:2`):
 * retried while Step Functions throttles, and a child that already exists (a retried Map item, a
 * resumed batch) is a result, not an error. Both places that start children (RunItems, and the
 * batch-priced fallback RunOnDemand) build theirs here, so they cannot drift apart.
 */
export function childExecution(scope: Construct, id: string, props: ChildExecutionProps) {
  const start = new ChildStartExecution(scope, id, {
    comment: props.comment,
    stateMachine: props.perDraft,
    integrationPattern: IntegrationPattern.RUN_JOB,
    name: props.name,
    // AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID in the input: the console links the child to its batch.
    associateWithParent: true,
    input: TaskInput.fromObject({
      draftRef: JsonPath.objectAt("$.draftRef"),
      // The content claim is per submission: identical drafts within one batch are one run.
      submissionId: JsonPath.stringAt("$.batchId"),
    }),
    // The child's run record is the result; the Map keeps only what identifies it.
    resultSelector: {
      status: JsonPath.stringAt("$.Status"),
      executionArn: JsonPath.stringAt("$.ExecutionArn"),
    },
    // The child ends itself by its own timeout first; this bounds the wait (and runtimes whose
    // Task states default to 60 s, as aws-local-stepfunctions' do, must not cut a child short).
    taskTimeout: Timeout.duration(Duration.minutes(props.executionTimeoutMinutes + 5)),
  });
  start.addRetry(CHILD_START_RETRY);
  start.addCatch(
    new Pass(scope, props.alreadyRan.id, {
      comment: props.alreadyRan.comment,
      parameters: { status: "ALREADY_RAN", ...props.alreadyRan.keep },
    }),
    { errors: ["StepFunctions.ExecutionAlreadyExistsException"], resultPath: "$.existing" },
  );
  return start;
}
