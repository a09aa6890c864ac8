import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { UsageError } from "../../app/inputs.js";
import type { ModelQueueUrls } from "./waiting.js";

/** The global options that point the command line at a deployed stack instead of a data folder. */
export interface CloudOptions {
  stack?: string;
  table?: string;
  bucket?: string;
  bus?: string;
  stateMachine?: string;
}

/** What cloud mode works on: the stack's resources, by name. */
export interface CloudResources {
  /** The stack they came from, if any (messages name it). */
  stackName?: string;
  table: string;
  bucket: string;
  /** The project's bus; a review's `Draft Reviewed` and `--via event` submissions go there. */
  bus?: string;
  /** The per-draft state machine's ARN: a run's execution is `<…:execution:name>:<runId>`. */
  stateMachineArn?: string;
  /** The model queues' URLs (a stack deployed before they were outputs has none: their depth is unknown). */
  modelQueues?: ModelQueueUrls;
}

/** The stack outputs cloud mode reads (infra/stack.ts writes them). */
const OUTPUTS = {
  table: "TableName",
  bucket: "BucketName",
  bus: "EventBusName",
  stateMachineArn: "StateMachineArn",
  correctQueue: "CorrectQueueUrl",
  judgeQueue: "JudgeQueueUrl",
} as const;

async function stackOutputs(client: CloudFormationClient, name: string): Promise<Record<string, string>> {
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: name }));
    return Object.fromEntries(
      (Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? "", o.OutputValue ?? ""]),
    );
  } catch (error) {
    // CloudFormation answers a stack that does not exist (or that this identity may not see) so.
    if ((error as { name?: string }).name === "ValidationError")
      throw new UsageError(`no stack ${name}: ${(error as Error).message}`);
    throw error;
  }
}

/**
 * The resources of `--stack` (its DescribeStacks outputs), with any explicit `--table`, `--bucket`,
 * `--bus`, `--state-machine` taking precedence; without `--stack`, `--table` and `--bucket` are
 * required. The CDK app names an environment's stack `Redraft-<env>`: `--stack redraft-<env>` that
 * finds no stack tries that spelling too.
 */
export async function resolveResources(
  opts: CloudOptions,
  client: CloudFormationClient = new CloudFormationClient({}),
): Promise<CloudResources> {
  let outputs: Record<string, string> = {};
  let stackName = opts.stack;
  if (stackName) {
    const env = /^redraft-(.+)$/.exec(stackName)?.[1];
    try {
      outputs = await stackOutputs(client, stackName);
    } catch (error) {
      if (!(error instanceof UsageError) || !env) throw error;
      stackName = `Redraft-${env}`;
      outputs = await stackOutputs(client, stackName);
    }
  }
  const table = opts.table ?? outputs[OUTPUTS.table];
  const bucket = opts.bucket ?? outputs[OUTPUTS.bucket];
  if (!table || !bucket)
    throw new UsageError(
      stackName
        ? `stack ${stackName} has no ${!table ? OUTPUTS.table : OUTPUTS.bucket} output: pass --table and --bucket`
        : "cloud mode needs --stack <name>, or --table and --bucket (with --bus and --state-machine to review and follow executions)",
    );
  const bus = opts.bus ?? outputs[OUTPUTS.bus];
  const stateMachineArn = opts.stateMachine ?? outputs[OUTPUTS.stateMachineArn];
  const correct = outputs[OUTPUTS.correctQueue];
  const judge = outputs[OUTPUTS.judgeQueue];
  const modelQueues: ModelQueueUrls = { ...(correct && { correct }), ...(judge && { judge }) };
  return {
    ...(stackName && { stackName }),
    table,
    bucket,
    ...(bus && { bus }),
    ...(stateMachineArn && { stateMachineArn }),
    ...(Object.keys(modelQueues).length > 0 && { modelQueues }),
  };
}

/** A run's execution ARN: the state machine's ARN with `execution` for `stateMachine`, then the run id. */
export function executionArn(stateMachineArn: string, runId: string): string {
  return `${stateMachineArn.replace(":stateMachine:", ":execution:")}:${runId}`;
}

/** The Step Functions console page of an execution, in its own region: the viewer builds the same link. */
export { executionConsoleUrl as consoleUrl } from "../../shared/console-url.js";
