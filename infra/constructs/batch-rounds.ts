import { Duration, Stack } from "aws-cdk-lib";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import type { IEventBus } from "aws-cdk-lib/aws-events";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { Secret } from "aws-cdk-lib/aws-secretsmanager";
import {
  Choice,
  Condition,
  DistributedMap,
  type IChainable,
  JsonPath,
  Pass,
  type StateMachine,
  StateMachineType,
  Succeed,
  TaskInput,
  Timeout,
  Wait,
  WaitTime,
} from "aws-cdk-lib/aws-stepfunctions";
import { LambdaInvoke } from "aws-cdk-lib/aws-stepfunctions-tasks";
import { Construct } from "constructs";
import { LoopEnvSchema, RoundsTimingEnvSchema } from "../../contracts/env.js";
import { BatchStateNames, StateNames } from "../../contracts/state-names.js";
import type { RoundsState } from "../../shared/batch/round-steps.js";
import type { ParkedCall } from "../../shared/batch/rounds.js";
import { BATCH_RESULTS_PREFIX, BEDROCK_JOBS_PREFIX, RUNS_PREFIX } from "../../shared/store/bucket-layout.js";
import type { EnvConfig } from "../config.js";
import { acknowledge, referenceFinding } from "../nag.js";
import { LAMBDA_TASK_SLACK, MODEL_RETRY, SERVICE_RETRY } from "../retries.js";
import { childExecution } from "./child-execution.js";
import { foundationModelId, liveAlias, redraftFunction } from "./functions.js";
import { PrefixedJsonLItemReader, PrefixedResultWriter } from "./map-io.js";
import { CorrectionGraph } from "./workflow.js";

export interface BatchRoundsProps {
  readonly config: EnvConfig;
  readonly table: ITable;
  readonly bucket: IBucket;
  readonly bus: IEventBus;
  /** λ validate and λ revalidate: the loop's steps that call no model run as on demand. */
  readonly validate: NodejsFunction;
  readonly revalidate: NodejsFunction;
  /** The per-draft state machine: the on-demand fallback starts one child per item left. */
  readonly perDraft: StateMachine;
  /** The Anthropic API key, when the deployment's provider is `anthropic`. */
  readonly anthropicSecret?: Secret | undefined;
  /** Where the rounds end: AggregateBatch, which reads every item's run by its id. */
  readonly aggregate: IChainable;
  /** Catch target for a round that failed as a whole (AggregateBatch, with `$.error`). */
  readonly onError: { handler: IChainable; resultPath: string };
}

/** A round step (submit, poll, collect) talks to the batch service and may write many blobs. */
const ROUNDS_FUNCTION_TIMEOUT = Duration.minutes(15);

/**
 * Batch pricing: the branch of the batch state machine that corrects a manifest in rounds of batch
 * requests (README "Batches"). StartRounds → RunRound, a Distributed Map whose item processor is
 * the per-draft correction loop itself ({@link CorrectionGraph}): round 0 validates and repairs
 * every item (no model); an item whose loop asks the model stops there (AwaitingBatch), its request
 * parked. SubmitRound sends the parked calls as one batch request (split by the service's limits),
 * WaitForBatch / PollBatch wait with a doubling interval, CollectRound puts each result where its
 * call finds it, and RunRound takes the answered items on from the step that asked, through the
 * same Choice states and stop rules as on demand. When no more round fits before the deadline, the
 * items left run on demand (RunOnDemand: child executions of the per-draft state machine, which
 * find the answers already paid for and go on from there).
 */
export class BatchRounds extends Construct {
  readonly start: IChainable;
  readonly function: NodejsFunction;
  /** The role Bedrock assumes for the rounds' model invocation jobs; none when the model is not on Bedrock. */
  readonly bedrockRole: Role | undefined;

  constructor(scope: Construct, id: string, props: BatchRoundsProps) {
    super(scope, id);
    const { config, table, bucket, bus } = props;
    const pricing = config.batchPricing;
    const bedrock = config.model.provider === "bedrock";

    const stack = Stack.of(this);
    const jobsArn = `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:model-invocation-job/*`;
    // The service role Bedrock assumes for a model invocation job: its input and output files, and
    // nothing else. Only Bedrock's own jobs in this account may assume it (the confused deputy).
    const serviceRole = bedrock
      ? new Role(this, "BedrockBatchRole", {
          assumedBy: new ServicePrincipal("bedrock.amazonaws.com").withConditions({
            StringEquals: { "aws:SourceAccount": stack.account },
            ArnLike: { "aws:SourceArn": jobsArn },
          }),
          description: "Bedrock batch inference of redraft: read a round's input file, write its output",
        })
      : undefined;
    if (serviceRole) {
      serviceRole.addToPolicy(
        new PolicyStatement({
          actions: ["s3:GetObject", "s3:PutObject"],
          resources: [bucket.arnForObjects(`${BEDROCK_JOBS_PREFIX}*`)],
        }),
      );
      // Bedrock's documented policy for the service role lists the bucket; the listing is held to
      // the jobs' own prefix, so the role cannot learn the keys of drafts, runs or results.
      serviceRole.addToPolicy(
        new PolicyStatement({
          actions: ["s3:ListBucket"],
          resources: [bucket.bucketArn],
          conditions: { StringLike: { "s3:prefix": [`${BEDROCK_JOBS_PREFIX}*`] } },
        }),
      );
      acknowledge(serviceRole, {
        id: `AwsSolutions-IAM5[${referenceFinding(bucket, `/${BEDROCK_JOBS_PREFIX}*`)}]`,
        reason:
          "One input and one output file per round under batch-jobs/<batchId>-r<n>-<i>/, named at run time.",
      });
    }
    this.bedrockRole = serviceRole;

    this.function = redraftFunction(this, "rounds", {
      description:
        "Batch-priced rounds: the loop's model steps answered by batch requests; submit, poll, collect",
      timeout: ROUNDS_FUNCTION_TIMEOUT,
      envSchemas: [LoopEnvSchema, RoundsTimingEnvSchema],
      environment: {
        TABLE_NAME: table.tableName,
        BUCKET_NAME: bucket.bucketName,
        DEPLOYMENT_CONFIG: JSON.stringify(config.deployment),
        RETENTION_DAYS: String(config.retentionDays),
        MODEL_PROVIDER: config.model.provider,
        MODEL_ID: config.model.id,
        ...(props.anthropicSecret && { ANTHROPIC_SECRET_ARN: props.anthropicSecret.secretArn }),
        ...(serviceRole && { BEDROCK_BATCH_ROLE_ARN: serviceRole.roleArn }),
        BATCH_DEADLINE_MINUTES: String(pricing.deadlineMinutes),
        BATCH_ROUND_ESTIMATE_MINUTES: String(pricing.roundEstimateMinutes),
        BATCH_FALLBACK_RESERVE_MINUTES: String(pricing.fallbackReserveMinutes),
        BATCH_POLL_FIRST_SECONDS: String(pricing.pollFirstSeconds),
        BATCH_POLL_MAX_SECONDS: String(pricing.pollMaxSeconds),
        // As many retries of a transient model failure as the per-draft machine's Retry makes.
        BATCH_MODEL_RETRIES: String(MODEL_RETRY.maxAttempts),
        POWERTOOLS_SERVICE_NAME: "redraft",
        POWERTOOLS_METRICS_NAMESPACE: "Redraft",
        POWERTOOLS_LOG_LEVEL: config.logLevel,
      },
      config,
      modelSdk: config.model.provider,
    });
    const fn = this.function;
    // The loop's model steps as λ judge needs them (read the run, add the judge's usage), and the
    // batch record's rounds: single items, updated, never created.
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
        resources: [table.tableArn],
      }),
    );
    const objects = (prefix: string) => bucket.arnForObjects(`${prefix}*`);
    // Every object the blob store writes carries the retention tag (PutObject with Tagging), which
    // S3 authorizes as s3:PutObjectTagging too.
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        resources: [
          objects(RUNS_PREFIX),
          objects(BATCH_RESULTS_PREFIX),
          // Bedrock batch inference's input and output files; the Message Batches API holds its own.
          ...(serviceRole ? [objects(BEDROCK_JOBS_PREFIX)] : []),
        ],
      }),
    );
    props.anthropicSecret?.grantRead(fn);
    if (serviceRole) {
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ["bedrock:CreateModelInvocationJob"],
          resources: [
            jobsArn,
            `arn:${stack.partition}:bedrock:*::foundation-model/${foundationModelId(config.model.id)}`,
            `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${config.model.id}`,
          ],
        }),
      );
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ["bedrock:GetModelInvocationJob", "bedrock:StopModelInvocationJob"],
          resources: [jobsArn],
        }),
      );
      // The service role goes to Bedrock's jobs and nowhere else.
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ["iam:PassRole"],
          resources: [serviceRole.roleArn],
          conditions: { StringEquals: { "iam:PassedToService": "bedrock.amazonaws.com" } },
        }),
      );
      acknowledge(
        fn,
        {
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:<AWS::Region>:<AWS::AccountId>:model-invocation-job/*]`,
          reason: "Model invocation jobs are created at run time, one per round; their ids are Bedrock's.",
        },
        {
          id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${foundationModelId(config.model.id)}]`,
          reason: "A global inference profile routes to the foundation model in any region.",
        },
      );
    }
    const prefixFinding = (prefix: string) => `AwsSolutions-IAM5[${referenceFinding(bucket, `/${prefix}*`)}]`;
    acknowledge(
      fn,
      {
        id: prefixFinding(RUNS_PREFIX),
        reason: "A run's answers and parked requests under runs/<runId>/, named at run time.",
      },
      {
        id: prefixFinding(BATCH_RESULTS_PREFIX),
        reason: "A round's lists and the Map's results under batch-results/<batchId>/.",
      },
      {
        id: "Serverless-LambdaDLQ",
        reason:
          "λ rounds is invoked synchronously by the batch state machine only, whose retries and catches handle a failure; no asynchronous invocation to dead-letter.",
      },
    );
    if (serviceRole)
      acknowledge(fn, {
        id: prefixFinding(BEDROCK_JOBS_PREFIX),
        reason: "Bedrock batch input and output files, one folder per round.",
      });

    // ── The rounds' item processor: the correction loop, entered where the item waits ─────────
    const awaiting = new Succeed(this, BatchStateNames.AwaitingBatch, {
      comment: "The item's next model call waits for the next batch request; its state is the Map's output.",
    });
    const parkedChoice: Record<string, string> = {
      [StateNames.CorrectExecution]: BatchStateNames.CorrectionParked,
      [StateNames.CorrectLogic]: BatchStateNames.LogicCorrectionParked,
      [StateNames.Judge]: BatchStateNames.JudgeParked,
    };
    const isParked = Condition.isPresent("$.parked");
    const resumes = (call: ParkedCall) =>
      Condition.and(isParked, Condition.stringEquals("$.parked.call", call));
    const graph = new CorrectionGraph(this, "Round", {
      validate: props.validate,
      correct: fn,
      revalidate: props.revalidate,
      judge: fn,
      table,
      bucket,
      bus,
      runId: JsonPath.stringAt("$.runId"),
      validatePayload: {
        runId: JsonPath.stringAt("$.runId"),
        // The content claim is per submission, as for the on-demand children: identical drafts are one run.
        input: { draftRef: JsonPath.objectAt("$.draftRef"), submissionId: JsonPath.stringAt("$.batchId") },
      },
      modelStepPayload: (step) => ({ step, state: JsonPath.entirePayload }),
      // A transient failure goes into the next round, counted like MODEL_RETRY's attempts.
      retryModelCalls: false,
      afterModelStep: (step, next) =>
        new Choice(this, parkedChoice[step] ?? `${step}Parked?`, {
          comment: "Parked for the next batch request, or answered: the loop goes on.",
        })
          .when(isParked, awaiting)
          .otherwise(next),
      entry: ({ validate, correctExecution, judge, correctLogic }) =>
        new Choice(this, BatchStateNames.ResumeAt, {
          comment: "Round 0 validates every item; later rounds resume each at the step that asked the batch.",
        })
          .when(resumes("correct"), correctExecution)
          .when(resumes("correct_logic"), correctLogic)
          .when(resumes("judge"), judge)
          .otherwise(validate),
    });

    const mapProps = {
      maxConcurrency: config.batchConcurrency,
      toleratedFailurePercentage: config.batchToleratedFailurePercentage,
      resultWriterV2: new PrefixedResultWriter({
        bucket: bucket as IBucket,
        prefix: BATCH_RESULTS_PREFIX.replace(/\/$/, ""),
      }),
      mapExecutionType: StateMachineType.STANDARD,
    };
    const runRound = new DistributedMap(this, BatchStateNames.RunRound, {
      comment:
        "Every item still correcting, up to its next model call: round 0 from Validate, later rounds from the answered call.",
      itemReader: new PrefixedJsonLItemReader({
        bucket: bucket as IBucket,
        key: JsonPath.stringAt("$.rounds.itemsKey"),
        prefix: BATCH_RESULTS_PREFIX,
      }),
      ...mapProps,
      // The tolerated share is of the batch's items, not of one round's: SubmitRound counts the
      // failed items of every round against batchToleratedFailurePercentage.
      toleratedFailurePercentage: 100,
      resultPath: "$.roundMap",
    });
    runRound.itemProcessor(graph.start);

    // A failed round step or Map: the round's batches still running are canceled, then AggregateBatch
    // ends the batch (and the items still under way) failed. Best effort: the step itself never fails.
    const abandon = new LambdaInvoke(this, BatchStateNames.AbandonRounds, {
      comment: "The batch fails: cancel the round's batch requests still running, then sum it up.",
      lambdaFunction: liveAlias(fn),
      payload: TaskInput.fromObject({
        step: "abandon",
        batchId: JsonPath.stringAt("$.batchId"),
        rounds: JsonPath.objectAt("$.rounds"),
      }),
      taskTimeout: Timeout.duration(ROUNDS_FUNCTION_TIMEOUT.plus(LAMBDA_TASK_SLACK)),
      resultPath: JsonPath.DISCARD,
      payloadResponseOnly: true,
      retryOnServiceExceptions: false,
    });
    abandon.addRetry(SERVICE_RETRY);
    abandon.next(props.onError.handler);
    const onError = { errors: ["States.ALL"], resultPath: props.onError.resultPath };

    const roundStep = (name: string, step: "submit" | "poll" | "collect") => {
      const task = new LambdaInvoke(this, name, {
        lambdaFunction: liveAlias(fn),
        payload: TaskInput.fromObject({
          step,
          batchId: JsonPath.stringAt("$.batchId"),
          rounds: JsonPath.objectAt("$.rounds"),
          ...(step === "submit" && { map: JsonPath.objectAt("$.roundMap") }),
        }),
        taskTimeout: Timeout.duration(ROUNDS_FUNCTION_TIMEOUT.plus(LAMBDA_TASK_SLACK)),
        resultPath: "$.rounds",
        payloadResponseOnly: true,
        retryOnServiceExceptions: false,
      });
      task.addRetry(SERVICE_RETRY);
      // The batch service throttled or briefly failed: wait and ask again.
      task.addRetry(MODEL_RETRY);
      task.addCatch(abandon, onError);
      return task;
    };
    const submit = roundStep(BatchStateNames.SubmitRound, "submit");
    const poll = roundStep(BatchStateNames.PollBatch, "poll");
    const collect = roundStep(BatchStateNames.CollectRound, "collect");
    runRound.addCatch(abandon, onError);

    // ── The on-demand fallback ────────────────────────────────────────────────────────────────
    const runDraft = childExecution(this, BatchStateNames.RunDraftOnDemand, {
      perDraft: props.perDraft,
      comment:
        "The item on demand: a child of the per-draft state machine named after its run, which reuses the answers its rounds paid for.",
      name: JsonPath.stringAt("$.runId"),
      alreadyRan: {
        id: BatchStateNames.OnDemandAlreadyRan,
        comment: "A retried item whose child already exists: AggregateBatch reads its run.",
        keep: { "runId.$": "$.runId" },
      },
      executionTimeoutMinutes: config.executionTimeoutMinutes,
    });
    const runOnDemand = new DistributedMap(this, BatchStateNames.RunOnDemand, {
      comment:
        "The items left at the deadline (or that no batch request takes), on demand, so the batch ends on time.",
      itemReader: new PrefixedJsonLItemReader({
        bucket: bucket as IBucket,
        key: JsonPath.stringAt("$.rounds.onDemandKey"),
        prefix: BATCH_RESULTS_PREFIX,
      }),
      itemSelector: {
        batchId: JsonPath.stringAt("$$.Map.Item.Value.batchId"),
        runId: JsonPath.stringAt("$$.Map.Item.Value.runId"),
        draftRef: JsonPath.objectAt("$$.Map.Item.Value.draftRef"),
      },
      ...mapProps,
      // As in RunRound: the share is of the batch's items, checked by AggregateBatch with the rounds'.
      toleratedFailurePercentage: 100,
      resultPath: "$.map",
    });
    runOnDemand.itemProcessor(runDraft);
    runOnDemand.addCatch(abandon, onError);
    runOnDemand.next(props.aggregate);

    const status = (value: RoundsState["status"]) => Condition.stringEquals("$.rounds.status", value);
    const wait = new Wait(this, BatchStateNames.WaitForBatch, {
      comment: "No compute while the batch request runs: the interval doubles after each poll.",
      time: WaitTime.secondsPath("$.rounds.waitSeconds"),
    });
    const submitted = new Choice(this, BatchStateNames.RoundSubmitted, {
      comment:
        "A batch request went out; or no round fits before the deadline; or nothing is left to correct.",
    })
      .when(status("submitted"), wait)
      .when(status("on_demand"), runOnDemand)
      .otherwise(props.aggregate);
    const ended = new Choice(this, BatchStateNames.BatchRequestEnded, {
      comment: "Ended: collect its results. At the deadline it was canceled: the items go on demand.",
    })
      .when(status("ended"), collect)
      .when(status("on_demand"), runOnDemand)
      .otherwise(wait);
    wait.next(poll).next(ended);
    collect.next(runRound);
    runRound.next(submit).next(submitted);

    this.start = new Pass(this, BatchStateNames.StartRounds, {
      comment: "Round 0 reads the item list; the deadline counts from the batch's start.",
      parameters: {
        number: 0,
        startedAt: JsonPath.stringAt("$$.Execution.StartTime"),
        itemsKey: JsonPath.stringAt("$.prepared.itemsKey"),
        status: "validating",
        jobs: [],
        waitSeconds: 0,
        longestRoundMs: 0,
        onDemandItems: 0,
        history: [],
        items: JsonPath.numberAt("$.prepared.items"),
        toleratedFailurePercentage: config.batchToleratedFailurePercentage,
        failedItems: 0,
      },
      resultPath: "$.rounds",
    }).next(runRound);
  }
}
