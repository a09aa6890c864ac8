import { fileURLToPath } from "node:url";
import { Duration, RemovalPolicy, Stack, Token } from "aws-cdk-lib";
import type { ITable } from "aws-cdk-lib/aws-dynamodb";
import { Effect, PolicyStatement } from "aws-cdk-lib/aws-iam";
import {
  Alias,
  ApplicationLogLevel,
  Architecture,
  Code,
  type IFunction,
  type IVersion,
  LoggingFormat,
  Runtime,
  SystemLogLevel,
  Tracing,
} from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup } from "aws-cdk-lib/aws-logs";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { Secret } from "aws-cdk-lib/aws-secretsmanager";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import type * as z from "zod";
import { LoopEnvSchema, lambdaEnvironment, OutcomeEnvSchema } from "../../contracts/env.js";
import { DEFAULT_MODEL_CONCURRENCY } from "../../shared/model/limited.js";
import {
  DRAFTS_PREFIX,
  RESULTS_PREFIX,
  RUNS_PREFIX,
  SOURCES_PREFIX,
} from "../../shared/store/bucket-layout.js";
import {
  type BundledModelSdk,
  LAMBDA_BUNDLES_CONTEXT,
  lambdaBundling,
  PROJECT_ROOT,
  prebuiltBundleDir,
} from "../bundling.js";
import type { EnvConfig } from "../config.js";
import { acknowledge, BASIC_EXECUTION_ROLE_FINDING, referenceFinding } from "../nag.js";
import { ModelInferenceProfile } from "./inference-profile.js";

const entry = (name: string) => fileURLToPath(new URL(`../../functions/${name}.ts`, import.meta.url));

/**
 * Lambda's runtime: Node 22, the floor `engines` sets for the project, CI and the local runtime
 * alike, so the handlers are tested on the Node major that runs them.
 */
export const LAMBDA_RUNTIME = Runtime.NODEJS_22_X;

/** Every function's memory (MB) and architecture; `redraft plan` prices GB-seconds with them. */
export const FUNCTION_MEMORY_MB = 1024;
export const FUNCTION_ARCHITECTURE = Architecture.ARM_64;

/**
 * One model request, as the model steps make it in the cloud: the SDK's timeout per request, and no
 * SDK retry — the state machine retries (MODEL_RETRY, jittered and visible in the console), so a
 * slow model cannot spend the Lambda's whole timeout on retries nobody sees.
 */
export const MODEL_REQUEST = { timeout: Duration.seconds(120), sdkRetries: 0 } as const;

/**
 * Each step's Lambda timeout. A model step fits its request(s) — `timeout × (sdkRetries + 1)` —
 * and a margin for the secret, the blobs and the store (MODEL_STEP_MARGIN); tests/infra checks it.
 */
export const FUNCTION_TIMEOUTS = {
  validate: Duration.seconds(60),
  correct: Duration.seconds(180),
  revalidate: Duration.seconds(60),
  judge: Duration.seconds(180),
} as const;

/** What a model step does besides its model request: read the key, the drafts, write the answer. */
export const MODEL_STEP_MARGIN = Duration.seconds(30);

/**
 * The fewest messages an SQS event source takes at once (its `maximumConcurrency` floor): each model
 * function is fed by its queue (model-queue.ts), so each needs at least this many slots.
 */
export const SQS_EVENT_SOURCE_MIN_CONCURRENCY = 2;

/**
 * The reserved concurrency of the two model steps out of `modelConcurrency`: the judge a quarter,
 * correct the rest, each at least SQS's floor of 2 (a function reserved below its event source's
 * concurrency is throttled by its own queue), so the calls in flight never exceed the configured
 * total and the total is at least 4. Thrown at synth, naming the setting to raise.
 */
export function modelConcurrencyShares(total: number): { correct: number; judge: number } {
  const least = 2 * SQS_EVENT_SOURCE_MIN_CONCURRENCY;
  if (!Number.isInteger(total) || total < least) {
    throw new RangeError(
      `modelConcurrency must be at least ${least} in the cloud, not ${total}: correct and judge each consume a model queue, and an SQS event source takes at least ${SQS_EVENT_SOURCE_MIN_CONCURRENCY} messages at once (raise deployment.modelConcurrency in infra/config.ts)`,
    );
  }
  const judge = Math.max(SQS_EVENT_SOURCE_MIN_CONCURRENCY, Math.floor(total / 4));
  return { correct: total - judge, judge };
}

/**
 * Whether the deployed functions run with `--enable-source-maps`: `-c sourceMaps=true` at synth or
 * deploy. Off by default: Node then parses the whole map (megabytes) at every cold start before the
 * handler runs. The map is shipped either way, so the flag can also be turned on for one function
 * in the console (NODE_OPTIONS) while a stack trace needs reading.
 */
export const SOURCE_MAPS_CONTEXT = "sourceMaps";

export interface RedraftFunctionProps {
  readonly description: string;
  readonly timeout: Duration;
  /**
   * The function's environment. NODE_OPTIONS is the builder's: `--enable-source-maps` is added when
   * source maps are on and removed when they are off (see {@link SOURCE_MAPS_CONTEXT}).
   */
  readonly environment: Record<string, string>;
  /**
   * The schemas the handler reads its environment with (contracts/env.ts): the environment is checked
   * against them at synth (`lambdaEnvironment`), so a key the handler does not read, or a required
   * one missing, fails here rather than at the first event.
   */
  readonly envSchemas: readonly z.ZodObject[];
  readonly config: EnvConfig;
  /** The handler's module. @default functions/<name>.ts */
  readonly entry?: string;
  /**
   * The model SDK the bundle may carry. A handler that never builds a model client should say
   * `none`: its bundle then has no model SDK in it.
   * @default every provider's SDK, if the handler's imports reach them
   */
  readonly modelSdk?: BundledModelSdk;
  /** Mapped stack traces at run time. @default the `sourceMaps` context flag, else false */
  readonly sourceMaps?: boolean;
  /** Where Lambda sends an asynchronous invocation that failed its retries (the trigger DLQ). */
  readonly deadLetterQueue?: IQueue;
  /** Concurrent executions set aside for (and limited to) this function. @default none */
  readonly reservedConcurrency?: number;
}

export interface FunctionsProps {
  readonly config: EnvConfig;
  readonly table: ITable;
  readonly bucket: IBucket;
  /** Present when the model provider is `anthropic`: the API key's secret. */
  readonly anthropicSecret?: Secret | undefined;
}

/**
 * The four Lambda handlers the state machine chains, and `outcome`, which counts how runs ended;
 * each with its own log group and a role that can do what its step does and nothing else.
 */
export class Functions extends Construct {
  readonly validate: NodejsFunction;
  readonly correct: NodejsFunction;
  readonly revalidate: NodejsFunction;
  readonly judge: NodejsFunction;
  readonly outcome: NodejsFunction;
  /** Bedrock only: the environment's application inference profile, which correct and judge invoke. */
  readonly inferenceProfile: ModelInferenceProfile | undefined;

  constructor(scope: Construct, id: string, props: FunctionsProps) {
    super(scope, id);
    const { config, table, bucket, anthropicSecret } = props;
    const { provider, id: modelId } = config.model;
    if (provider === "anthropic" && !anthropicSecret) {
      throw new Error("the anthropic provider needs the API key's secret");
    }

    const common = {
      TABLE_NAME: table.tableName,
      BUCKET_NAME: bucket.bucketName,
      DEPLOYMENT_CONFIG: JSON.stringify(config.deployment),
      DEDUPE_WINDOW_MS: String(config.dedupeWindowMinutes * 60_000),
      RETENTION_DAYS: String(config.retentionDays),
      POWERTOOLS_SERVICE_NAME: "redraft",
      POWERTOOLS_METRICS_NAMESPACE: "Redraft",
      POWERTOOLS_LOG_LEVEL: config.logLevel,
    };
    const model = {
      MODEL_PROVIDER: provider,
      MODEL_ID: modelId,
      MODEL_TIMEOUT_MS: String(MODEL_REQUEST.timeout.toMilliseconds()),
      MODEL_MAX_RETRIES: String(MODEL_REQUEST.sdkRetries),
      ...(anthropicSecret && { ANTHROPIC_SECRET_ARN: anthropicSecret.secretArn }),
    };
    // On Bedrock the model steps invoke a profile of their own (cost carries the stack's tags);
    // MODEL_ID stays the model's id, which prices, budgets and capabilities are looked up by.
    this.inferenceProfile =
      provider === "bedrock"
        ? new ModelInferenceProfile(this, "InferenceProfile", { envName: config.envName, modelId })
        : undefined;
    const invoking = {
      ...model,
      ...(this.inferenceProfile && { MODEL_INFERENCE_PROFILE_ARN: this.inferenceProfile.arn }),
    };

    const make = (
      name: string,
      description: string,
      timeout: Duration,
      environment: Record<string, string>,
      modelSdk: BundledModelSdk,
      reservedConcurrency?: number,
    ) =>
      redraftFunction(this, name, {
        description,
        timeout,
        environment,
        // λ outcome's EVENT_BUS_NAME is added by the observability construct, once the bus exists.
        envSchemas:
          name === "outcome" ? [OutcomeEnvSchema.partial({ EVENT_BUS_NAME: true })] : [LoopEnvSchema],
        config,
        modelSdk,
        ...(reservedConcurrency !== undefined && { reservedConcurrency }),
      });
    // The model is called by correct and judge only: their reserved concurrency bounds the calls
    // in flight, and a burst beyond it waits in the state machine's retry (MODEL_LOAD_RETRY).
    const shares = modelConcurrencyShares(config.deployment.modelConcurrency ?? DEFAULT_MODEL_CONCURRENCY);

    // Validate learns from MODEL_PROVIDER whether a model is configured (`modelAvailable`); it
    // carries the model settings so the environment check passes, but never reads the key.
    this.validate = make(
      "validate",
      "Load, reject or register, repair and check a draft (attempt 0)",
      FUNCTION_TIMEOUTS.validate,
      {
        ...common,
        ...model,
      },
      "none",
    );
    this.correct = make(
      "correct",
      "One model call on the best draft so far",
      FUNCTION_TIMEOUTS.correct,
      { ...common, ...invoking },
      provider,
      shares.correct,
    );
    // Re-validation never calls the model: without a provider it builds no client and needs no key.
    this.revalidate = make(
      "revalidate",
      "Repair and fully re-validate a corrected draft",
      FUNCTION_TIMEOUTS.revalidate,
      {
        ...common,
        MODEL_PROVIDER: "none",
      },
      "none",
    );
    this.judge = make(
      "judge",
      "The LLM judge of the logic phase",
      FUNCTION_TIMEOUTS.judge,
      { ...common, ...invoking },
      provider,
      shares.judge,
    );

    this.outcome = make(
      "outcome",
      "Count how runs ended (embedded metrics)",
      Duration.seconds(30),
      {
        TABLE_NAME: table.tableName,
        BUCKET_NAME: bucket.bucketName,
        RETENTION_DAYS: String(config.retentionDays),
        POWERTOOLS_SERVICE_NAME: "redraft",
        POWERTOOLS_METRICS_NAMESPACE: "Redraft",
        POWERTOOLS_LOG_LEVEL: config.logLevel,
      },
      "none",
    );
    // Reads the run of a failed execution; holds a run needing review (its attempts' ttl removed).
    this.outcome.addToRolePolicy(
      tableItems(table, ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"]),
    );
    // …and its objects: lists the run's own prefix (no other key), re-tags them `review`.
    this.outcome.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:ListBucket"],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { "s3:prefix": [`${RUNS_PREFIX}*`] } },
      }),
    );
    this.outcome.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:PutObjectTagging"],
        resources: [bucket.arnForObjects(`${RUNS_PREFIX}*`), bucket.arnForObjects(`${RESULTS_PREFIX}*`)],
      }),
    );

    this.grantValidate(table, bucket);
    this.grantCorrect(bucket);
    this.grantRevalidate(table, bucket);
    this.grantJudge(table, bucket);
    const objects = (prefix: string) => `AwsSolutions-IAM5[${referenceFinding(bucket, `/${prefix}*`)}]`;
    const perRun =
      "A run's objects are named by its run id at run time: this prefix is the narrowest scope IAM can state.";
    acknowledge(
      this.validate,
      {
        id: objects(DRAFTS_PREFIX),
        reason: "Validate reads the upload that started the run, whatever its name.",
      },
      { id: objects(RUNS_PREFIX), reason: perRun },
      {
        id: objects(SOURCES_PREFIX),
        reason: "Validate reads the source a draft names (context.source.ref), whatever its name.",
      },
    );
    acknowledge(this.correct, { id: objects(RUNS_PREFIX), reason: perRun });
    const synchronous = {
      id: "Serverless-LambdaDLQ",
      reason:
        "Invoked synchronously by the state machines only (lambda:invoke): a dead-letter queue applies to asynchronous invocations; a failure is the task's, retried and caught in the ASL.",
    };
    for (const fn of [this.validate, this.correct, this.revalidate, this.judge]) acknowledge(fn, synchronous);
    acknowledge(this.outcome, {
      id: "Serverless-LambdaDLQ",
      reason:
        "Its failed asynchronous invocations go to its live alias's on-failure destination, the retry queue it consumes (infra/constructs/observability.ts), not to a function-level dead-letter queue.",
    });
    acknowledge(this.revalidate, { id: objects(RUNS_PREFIX), reason: perRun });
    acknowledge(this.judge, { id: objects(RUNS_PREFIX), reason: perRun });
    acknowledge(
      this.outcome,
      { id: objects(RUNS_PREFIX), reason: perRun },
      {
        id: objects(RESULTS_PREFIX),
        reason:
          "A run's published draft is results/<draftId>/<runId>.json, named at run time; λ outcome re-tags it for review.",
      },
    );

    // Only the two steps that call the model can read its key or invoke it; Validate only needs
    // to know whether a model is configured (MODEL_PROVIDER).
    for (const fn of [this.correct, this.judge]) {
      if (anthropicSecret) {
        anthropicSecret.grantRead(fn);
        continue;
      }
      fn.addToRolePolicy(bedrockInvokePolicy(Stack.of(this), modelId, this.inferenceProfile?.arn));
      acknowledge(fn, {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${foundationModelId(modelId)}]`,
        reason:
          "A cross-region inference profile may serve the request from any region's copy of this one model.",
      });
    }
  }

  /** Validate reads the upload or attempt 0, registers the run and claims its content, writes attempt 0. */
  private grantValidate(table: ITable, bucket: IBucket): void {
    this.validate.addToRolePolicy(
      tableItems(table, ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]),
    );
    this.validate.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject"],
        resources: [
          bucket.arnForObjects(`${DRAFTS_PREFIX}*`),
          bucket.arnForObjects(`${RUNS_PREFIX}*`),
          // A draft's context.source.ref: only under sources/, which Validate checks before reading.
          bucket.arnForObjects(`${SOURCES_PREFIX}*`),
        ],
      }),
    );
    // Uploads are read by VersionId (the bucket is versioned), which needs its own action.
    this.validate.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObjectVersion"],
        resources: [bucket.arnForObjects(`${DRAFTS_PREFIX}*`)],
      }),
    );
    this.validate.addToRolePolicy(
      new PolicyStatement({
        // PutObjectTagging: every object is written with its retention tag (contracts/retention.ts).
        actions: ["s3:PutObject", "s3:PutObjectTagging"],
        resources: [bucket.arnForObjects(`${RUNS_PREFIX}*`)],
      }),
    );
    // No s3:ListBucket: without it S3 answers a missing key with 403, not 404, and the blob store
    // reads a 403 on a key this role may read as "not there" (functions/lib/s3-blobs.ts).
  }

  /** Correct reads the best draft and report, writes the model's answer and the candidate. */
  private grantCorrect(bucket: IBucket): void {
    this.correct.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        resources: [bucket.arnForObjects(`${RUNS_PREFIX}*`)],
      }),
    );
  }

  /** Revalidate writes the attempt record, adds its tokens, and updates the run's progress. */
  private grantRevalidate(table: ITable, bucket: IBucket): void {
    this.revalidate.addToRolePolicy(
      tableItems(table, ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]),
    );
    this.revalidate.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        resources: [bucket.arnForObjects(`${RUNS_PREFIX}*`)],
      }),
    );
  }

  /** Judge reads the best draft, stores its evidence, adds its tokens and points the run at its report. */
  private grantJudge(table: ITable, bucket: IBucket): void {
    this.judge.addToRolePolicy(tableItems(table, ["dynamodb:GetItem", "dynamodb:UpdateItem"]));
    this.judge.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
        resources: [bucket.arnForObjects(`${RUNS_PREFIX}*`)],
      }),
    );
  }
}

/**
 * One redraft Lambda function: the handler `functions/<name>.ts` (or `props.entry`) bundled as
 * `lambdaBundling` (infra/bundling.ts) says, on {@link LAMBDA_RUNTIME} (arm64, 1 GiB, X-Ray active), with its own log
 * group (the environment's retention and removal policy), JSON logs at the environment's level, and
 * the cdk-nag findings every such function shares acknowledged. Each bundle gets its side files and
 * carries the model SDK of `props.modelSdk` only.
 */
export function redraftFunction(scope: Construct, name: string, props: RedraftFunctionProps): NodejsFunction {
  const { description, timeout, config } = props;
  const logGroup = new LogGroup(scope, `${name}Logs`, {
    retention: config.logRetention,
    removalPolicy: config.removalPolicy === "destroy" ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  });
  const sourceMaps = props.sourceMaps ?? `${scope.node.tryGetContext(SOURCE_MAPS_CONTEXT)}` === "true";
  // Outside this repository (the published construct) the function deploys its prebuilt bundle;
  // here there is none, and it is bundled from source.
  const bundlesRoot = scope.node.tryGetContext(LAMBDA_BUNDLES_CONTEXT) as string | undefined;
  const prebuilt = props.entry ? undefined : prebuiltBundleDir(name, props.modelSdk, bundlesRoot);
  const fn = new NodejsFunction(scope, name, {
    description: `redraft ${config.envName}: ${description}`,
    ...(prebuilt
      ? { code: Code.fromAsset(prebuilt), handler: "index.handler" }
      : {
          entry: props.entry ?? entry(name),
          handler: "handler",
          projectRoot: PROJECT_ROOT,
          depsLockFilePath: `${PROJECT_ROOT}package-lock.json`,
          bundling: lambdaBundling(props.modelSdk),
        }),
    runtime: LAMBDA_RUNTIME,
    architecture: FUNCTION_ARCHITECTURE,
    memorySize: FUNCTION_MEMORY_MB,
    timeout,
    tracing: Tracing.ACTIVE,
    logGroup,
    loggingFormat: LoggingFormat.JSON,
    applicationLogLevelV2: ApplicationLogLevel[config.logLevel],
    systemLogLevelV2: SystemLogLevel.INFO,
    environment: withSourceMaps(
      lambdaEnvironment(props.envSchemas, props.environment, Token.isUnresolved),
      sourceMaps,
    ),
    ...(props.deadLetterQueue && { deadLetterQueue: props.deadLetterQueue, retryAttempts: 2 }),
    ...(props.reservedConcurrency !== undefined && {
      reservedConcurrentExecutions: props.reservedConcurrency,
    }),
  });
  // (Version and Alias declare `role` optional, which exactOptionalPropertyTypes tells apart from IFunction's.)
  const version = fn.currentVersion as IVersion;
  aliases.set(fn, new Alias(scope, `${name}Live`, { aliasName: LIVE_ALIAS, version }) as IFunction);
  acknowledge(
    fn,
    {
      id: "AwsSolutions-L1",
      reason:
        "Pinned to nodejs22.x, not the newest runtime, so that one known runtime runs the bundles; they target node22, the floor package.json engines sets.",
    },
    {
      id: `AwsSolutions-IAM4[${BASIC_EXECUTION_ROLE_FINDING}]`,
      reason: "AWSLambdaBasicExecutionRole only allows writing this function's own log streams.",
    },
    {
      id: "AwsSolutions-IAM5[Resource::*]",
      reason: "X-Ray PutTraceSegments / PutTelemetryRecords support no resource-level permissions.",
    },
    {
      id: "Serverless-LambdaLatestVersion",
      reason:
        "cdk-nag's Serverless pack wants the newest Node runtime; redraft deploys the Node major its tests and bundles target (22), and moves with them.",
    },
  );
  if (props.deadLetterQueue) {
    acknowledge(fn, {
      id: "Serverless-LambdaAsyncFailureDestination",
      reason:
        "Its failed asynchronous invocations go to the function's dead-letter queue (DeadLetterConfig, alarmed), which Lambda applies to every version and so to the live alias too.",
    });
  }
  return fn;
}

/**
 * The alias every caller invokes (the state machines' tasks, the rules' targets): a published
 * version, so an execution that lasts hours keeps calling the code it started with while a deploy
 * publishes the next, and a deploy can be rolled back by pointing the alias at the previous version.
 */
export const LIVE_ALIAS = "live";
const aliases = new WeakMap<IFunction, IFunction>();

/** What to invoke for a function: its `live` alias when redraftFunction built it, else the function. */
export function liveAlias(fn: IFunction): IFunction {
  return aliases.get(fn) ?? fn;
}

/** NODE_OPTIONS as the builder decides it: `--enable-source-maps` only when source maps are on. */
function withSourceMaps(environment: Record<string, string>, on: boolean): Record<string, string> {
  const { NODE_OPTIONS = "", ...rest } = environment;
  const flags = NODE_OPTIONS.split(/\s+/).filter((flag) => flag !== "" && flag !== "--enable-source-maps");
  if (on) flags.push("--enable-source-maps");
  return flags.length > 0 ? { ...rest, NODE_OPTIONS: flags.join(" ") } : rest;
}

/** Item-level actions on the table itself (not its indexes: the steps never query). */
function tableItems(table: ITable, actions: string[]): PolicyStatement {
  return new PolicyStatement({ effect: Effect.ALLOW, actions, resources: [table.tableArn] });
}

/** Bedrock inference-profile prefixes (`us.`, `eu.`, `apac.`, `global.`…) in front of a model id. */
const PROFILE_PREFIX = /^(?:[a-z]{2,6})\.(?=anthropic\.)/;

/** The foundation model an inference-profile id (`global.anthropic.…`) routes to; a model id as it is. */
export function foundationModelId(modelId: string): string {
  return modelId.replace(PROFILE_PREFIX, "");
}

/**
 * `bedrock:InvokeModel` on exactly the configured model: the inference profile in this account and
 * region when the id is a profile, and the foundation model in whichever region the profile routes to;
 * and the environment's application inference profile, through which the calls go. Bedrock checks
 * InvokeModel on the application profile and on what it routes to (the system profile, the models).
 */
function bedrockInvokePolicy(stack: Stack, modelId: string, applicationProfileArn?: string): PolicyStatement {
  const foundationModel = foundationModelId(modelId);
  const resources = [
    `arn:${stack.partition}:bedrock:*::foundation-model/${foundationModel}`,
    // Global profiles route to the foundation model without a region in its ARN.
    `arn:${stack.partition}:bedrock:::foundation-model/${foundationModel}`,
  ];
  if (foundationModel !== modelId) {
    resources.unshift(
      `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${modelId}`,
    );
  }
  if (applicationProfileArn !== undefined) resources.unshift(applicationProfileArn);
  return new PolicyStatement({ actions: ["bedrock:InvokeModel"], resources });
}
