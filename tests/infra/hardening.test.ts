import { readFileSync } from "node:fs";
import { App, Duration, Stack, Validations } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks, NagPack, ServerlessChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { describe, expect, it } from "vitest";
import { RETENTION_TAG } from "../../contracts/retention.js";
import { StateNames } from "../../contracts/state-names.js";
import { CREATED_SHARDS, INDEXES, runIndexKeys } from "../../contracts/table.js";
import { BUNDLE_TARGET } from "../../infra/bundling.js";
import { ENV_NAMES, environments, loadConfig } from "../../infra/config.js";
import {
  LAMBDA_RUNTIME,
  liveAlias,
  redraftFunction,
  SOURCE_MAPS_CONTEXT,
} from "../../infra/constructs/functions.js";
import { RETAINED_PREFIXES } from "../../infra/constructs/storage.js";
import { acknowledge } from "../../infra/nag.js";
import { makeRun } from "../stores/fixtures.js";
import { getAsl, stateOf } from "./asl.js";
import { logicalId, type Synthesized, synthesize, synthesizeFresh } from "./synth.js";

const synthesized = Object.fromEntries(ENV_NAMES.map((env) => [env, synthesize(env)])) as Record<
  (typeof ENV_NAMES)[number],
  Synthesized
>;

type LifecycleRule = {
  Id?: string;
  TagFilters?: { Key: string; Value: string }[];
  Prefix?: string;
  Status: string;
  ExpirationInDays?: number;
  NoncurrentVersionExpiration?: { NoncurrentDays: number };
};

function lifecycleOf(s: Synthesized): LifecycleRule[] {
  const bucket = s.template.toJSON().Resources[logicalId(s.stack.storage.bucket)].Properties;
  return bucket.LifecycleConfiguration.Rules as LifecycleRule[];
}

const variablesOf = (f: unknown): Record<string, unknown> =>
  (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties.Environment
    ?.Variables ?? {};

describe("1. retention per environment", () => {
  it("keeps 90 days in prod and 7 in dev", () => {
    expect(environments.prod.retentionDays).toBe(90);
    expect(environments.dev.retentionDays).toBe(7);
  });

  it.each(ENV_NAMES)(
    "%s: runs/, results/ and drafts/ expire after retentionDays, noncurrent versions too",
    (env) => {
      const days = environments[env].retentionDays;
      const rules = lifecycleOf(synthesized[env]);
      expect(RETAINED_PREFIXES).toEqual(["drafts/", "runs/", "results/"]);
      for (const prefix of RETAINED_PREFIXES) {
        expect(rules).toContainEqual(
          expect.objectContaining({
            Prefix: prefix,
            Status: "Enabled",
            ExpirationInDays: days,
            NoncurrentVersionExpiration: { NoncurrentDays: days },
          }),
        );
        // Uploads expire by age; the run's own objects only while not held for review (λ outcome).
        const rule = rules.find((r) => r.Prefix === prefix);
        expect(rule?.TagFilters).toEqual(
          prefix === "drafts/" ? undefined : [{ Key: RETENTION_TAG, Value: "standard" }],
        );
      }
    },
  );

  it.each(ENV_NAMES)(
    "%s: the table expires items by ttl, which the store writes for retentionDays",
    (env) => {
      const { template } = synthesized[env];
      template.hasResourceProperties("AWS::DynamoDB::Table", {
        TimeToLiveSpecification: { AttributeName: "ttl", Enabled: true },
      });
      const { stack } = synthesized[env];
      const writers = Object.entries(template.findResources("AWS::Lambda::Function")).filter(
        ([, f]) => "TABLE_NAME" in variablesOf(f),
      );
      // Every function that writes the table is named, so a new one cannot slip in without a ttl.
      const { validate, correct, revalidate, judge, outcome } = stack.functions;
      expect(writers.map(([id]) => id).sort()).toEqual(
        [
          validate,
          correct,
          revalidate,
          judge,
          outcome,
          stack.finalizer.function,
          stack.batches.function,
          stack.batches.rounds.function,
        ]
          .map(logicalId)
          .sort(),
      );
      for (const [, f] of writers)
        expect(variablesOf(f).RETENTION_DAYS).toBe(String(environments[env].retentionDays));
    },
  );

  it("keeps the review queue: MarkNeedsReview removes the run's ttl, MarkValidated leaves it", () => {
    const asl = getAsl(synthesized.prod.template, {
      stateMachineLogicalId: logicalId(synthesized.prod.stack.workflow.stateMachine),
    });
    const params = (name: string) =>
      (stateOf(asl, name) as unknown as { Parameters: { UpdateExpression: string } }).Parameters;
    expect(params(StateNames.MarkNeedsReview).UpdateExpression).toMatch(/ REMOVE #ttl$/);
    expect(params(StateNames.MarkValidated).UpdateExpression).not.toMatch(/ttl/);
  });
});

describe("2. keys that scale", () => {
  it("spreads byCreated over shards: no index has one constant partition", () => {
    const partitions = new Set(
      Array.from(
        { length: 400 },
        (_, i) => runIndexKeys(makeRun(`run-${i}`))[INDEXES.byCreated.partitionKey],
      ),
    );
    expect(partitions.size).toBe(CREATED_SHARDS);
  });

  it.each(ENV_NAMES)("%s: every index projects keys only", (env) => {
    const table = Object.values(synthesized[env].template.findResources("AWS::DynamoDB::Table")).find((t) =>
      JSON.stringify(t).includes("GlobalSecondaryIndexes"),
    ) as { Properties: { GlobalSecondaryIndexes: { Projection: unknown }[] } };
    expect(table.Properties.GlobalSecondaryIndexes).toHaveLength(Object.keys(INDEXES).length);
    for (const index of table.Properties.GlobalSecondaryIndexes) {
      expect(index.Projection).toEqual({ ProjectionType: "KEYS_ONLY" });
    }
  });
});

describe("3. logs per environment", () => {
  it.each([
    ["prod", "ERROR", false],
    ["staging", "ERROR", true],
    ["dev", "ALL", true],
  ] as const)("%s: the state machine logs %s, execution data %s", (env, level, data) => {
    expect(environments[env].stateMachineLogs).toEqual({ level, includeExecutionData: data });
    synthesized[env].template.hasResourceProperties("AWS::StepFunctions::StateMachine", {
      LoggingConfiguration: Match.objectLike({ Level: level, IncludeExecutionData: data }),
    });
  });
});

describe("7. least privilege, justified", () => {
  const { stack, template } = synthesized.prod;
  type Statement = { Action: string | string[]; Resource: unknown };
  const bucket = logicalId(stack.storage.bucket);
  const table = logicalId(stack.storage.table);
  const objects = (prefix: string) => `${bucket}.Arn/${prefix}*`;
  const XRAY = ["xray:PutTelemetryRecords", "xray:PutTraceSegments"];

  /** Renders a resource as `Logical.Attr[/suffix]` or the literal, so the table below reads plainly. */
  function render(resource: unknown): string {
    if (typeof resource === "string") return resource;
    const r = resource as Record<string, unknown>;
    if (r["Fn::GetAtt"]) return (r["Fn::GetAtt"] as string[]).join(".");
    if (r.Ref) return `${r.Ref}`;
    if (r["Fn::Join"]) return (r["Fn::Join"] as [string, unknown[]])[1].map(render).join("");
    return JSON.stringify(resource);
  }

  /** Every (action, resource) pair a role is allowed, as `action on resource`. */
  function grantsOf(role: IConstruct): string[] {
    const policies = template.findResources("AWS::IAM::Policy", {
      Properties: { Roles: Match.arrayWith([{ Ref: logicalId(role) }]) },
    });
    const pairs = Object.values(policies).flatMap((p) =>
      (
        p as { Properties: { PolicyDocument: { Statement: Statement[] } } }
      ).Properties.PolicyDocument.Statement.flatMap((s) =>
        [s.Action].flat().flatMap((a) => [s.Resource].flat().map((r) => `${a} on ${render(r)}`)),
      ),
    );
    return [...new Set(pairs)].sort();
  }

  const fn = stack.functions;
  const model = environments.prod.model.id;
  const bedrockArn = (resource: string) =>
    `arn:AWS::Partition:bedrock:AWS::Region:AWS::AccountId:${resource}`;
  const expected: Record<string, { role: IConstruct; grants: string[] }> = {
    validate: {
      role: fn.validate.role as IConstruct,
      grants: [
        ...XRAY.map((a) => `${a} on *`),
        ...["GetItem", "PutItem", "UpdateItem"].map((a) => `dynamodb:${a} on ${table}.Arn`),
        `s3:GetObject on ${objects("drafts/")}`,
        `s3:GetObject on ${objects("runs/")}`,
        // A draft's context.source.ref, a key under sources/.
        `s3:GetObject on ${objects("sources/")}`,
        // A batch item's child run reads its draft like an upload.
        `s3:GetObject on ${objects("batch-items/")}`,
        `s3:GetObjectVersion on ${objects("drafts/")}`,
        `s3:PutObject on ${objects("runs/")}`,
        `s3:PutObjectTagging on ${objects("runs/")}`,
      ],
    },
    revalidate: {
      role: fn.revalidate.role as IConstruct,
      grants: [
        ...XRAY.map((a) => `${a} on *`),
        ...["GetItem", "PutItem", "UpdateItem"].map((a) => `dynamodb:${a} on ${table}.Arn`),
        `s3:GetObject on ${objects("runs/")}`,
        `s3:PutObject on ${objects("runs/")}`,
        `s3:PutObjectTagging on ${objects("runs/")}`,
      ],
    },
    outcome: {
      role: fn.outcome.role as IConstruct,
      grants: [
        ...XRAY.map((a) => `${a} on *`),
        ...["GetItem", "Query", "UpdateItem"].map((a) => `dynamodb:${a} on ${table}.Arn`),
        // Only its runs' keys (condition s3:prefix runs/*, asserted below), and their tags.
        `s3:ListBucket on ${bucket}.Arn`,
        `s3:PutObjectTagging on ${objects("runs/")}`,
        `s3:PutObjectTagging on ${objects("results/")}`,
        // An approval's Draft Validated (condition on the detail type, tests/infra/observability.test.ts).
        `events:PutEvents on ${logicalId(stack.projectBus.bus)}.Arn`,
        // Its retry queue: its own failed invocations go there (on-failure destination), and it consumes them.
        ...[
          "ChangeMessageVisibility",
          "DeleteMessage",
          "GetQueueAttributes",
          "GetQueueUrl",
          "ReceiveMessage",
          "SendMessage",
        ].map((a) => `sqs:${a} on ${logicalId(stack.observability.outcomeRetries)}.Arn`),
      ],
    },
    finalize: {
      role: stack.finalizer.function.role as IConstruct,
      grants: [
        ...XRAY.map((a) => `${a} on *`),
        // Reads the run, fails it conditionally, or registers a failed one.
        ...["GetItem", "PutItem", "UpdateItem"].map((a) => `dynamodb:${a} on ${table}.Arn`),
        `events:PutEvents on ${logicalId(stack.projectBus.bus)}.Arn`,
        // Lambda's own asynchronous-invocation DLQ.
        `sqs:SendMessage on ${logicalId(stack.finalizer.deadLetterQueue)}.Arn`,
      ],
    },
    // Batch pricing's steps (prod: Bedrock batch inference). The loop's model steps as λ judge has
    // them, the rounds' lists, the jobs' files; it starts and watches jobs but invokes no model.
    rounds: {
      role: stack.batches.rounds.function.role as IConstruct,
      grants: [
        ...XRAY.map((a) => `${a} on *`),
        ...["GetItem", "UpdateItem"].map((a) => `dynamodb:${a} on ${table}.Arn`),
        ...["runs/", "batch-results/", "batch-jobs/"].flatMap((prefix) =>
          ["GetObject", "PutObject", "PutObjectTagging"].map((a) => `s3:${a} on ${objects(prefix)}`),
        ),
        ...["model-invocation-job/*", `inference-profile/${model}`].map(
          (r) => `bedrock:CreateModelInvocationJob on ${bedrockArn(r)}`,
        ),
        `bedrock:CreateModelInvocationJob on arn:AWS::Partition:bedrock:*::foundation-model/${model.replace(/^global\./, "")}`,
        `bedrock:GetModelInvocationJob on ${bedrockArn("model-invocation-job/*")}`,
        `bedrock:StopModelInvocationJob on ${bedrockArn("model-invocation-job/*")}`,
        // Only to Bedrock (condition iam:PassedToService, asserted in security.test.ts).
        `iam:PassRole on ${logicalId(stack.batches.rounds.bedrockRole as IConstruct)}.Arn`,
      ],
    },
    bedrockBatchRole: {
      role: stack.batches.rounds.bedrockRole as IConstruct,
      grants: [
        `s3:GetObject on ${objects("batch-jobs/")}`,
        `s3:PutObject on ${objects("batch-jobs/")}`,
        // Only the jobs' keys (condition s3:prefix batch-jobs/*, asserted below).
        `s3:ListBucket on ${bucket}.Arn`,
      ],
    },
    start: {
      role: stack.triggers.starter.role as IConstruct,
      grants: [
        ...XRAY.map((a) => `${a} on *`),
        `states:StartExecution on ${logicalId(stack.workflow.stateMachine)}`,
        `states:StartExecution on ${logicalId(stack.batches.stateMachine)}`,
        // Lambda's own asynchronous-invocation DLQ.
        `sqs:SendMessage on ${logicalId(stack.triggers.deadLetterQueue)}.Arn`,
      ],
    },
  };

  it.each(Object.keys(expected))("%s: exactly the actions and resources of its table", (name) => {
    const { role, grants } = expected[name] as { role: IConstruct; grants: string[] };
    expect(grantsOf(role)).toEqual([...grants].sort());
  });

  it.each(["correct", "judge"] as const)(
    "%s (prod, Bedrock): runs/ objects and the one model, nothing else",
    (name) => {
      const grants = grantsOf(fn[name].role as IConstruct);
      const others = grants.filter((g) => !g.startsWith("bedrock:InvokeModel on "));
      // The environment's application inference profile (made from the one model), or the model itself.
      const profile = `bedrock:InvokeModel on ${logicalId(stack.functions.inferenceProfile?.profile as IConstruct)}.InferenceProfileArn`;
      expect(grants).toContain(profile);
      expect(
        grants
          .filter((g) => g.startsWith("bedrock:") && g !== profile)
          .every((g) => g.includes(model.replace(/^global\./, ""))),
      ).toBe(true);
      const expectedOthers = [
        ...XRAY.map((a) => `${a} on *`),
        `s3:GetObject on ${objects("runs/")}`,
        `s3:PutObject on ${objects("runs/")}`,
        `s3:PutObjectTagging on ${objects("runs/")}`,
        ...(name === "judge" ? ["GetItem", "UpdateItem"].map((a) => `dynamodb:${a} on ${table}.Arn`) : []),
        // Its own model queue (infra/constructs/model-queue.ts) and the task tokens it answers.
        ...[
          "ChangeMessageVisibility",
          "DeleteMessage",
          "GetQueueAttributes",
          "GetQueueUrl",
          "ReceiveMessage",
        ].map((a) => `sqs:${a} on ${logicalId(stack.modelQueue.queues[name])}.Arn`),
        ...["SendTaskFailure", "SendTaskHeartbeat", "SendTaskSuccess"].map(
          (a) => `states:${a} on ${logicalId(stack.workflow.stateMachine)}`,
        ),
      ].sort();
      expect(others).toEqual(expectedOthers);
    },
  );

  it("state machine: invoke validate and revalidate, queue the model work, update runs, publish runs/ → results/, put outcome events", () => {
    const grants = grantsOf(stack.workflow.stateMachine.role);
    // Only each function's `live` alias: never $LATEST, never another version.
    const invoke = [fn.validate, fn.revalidate].map(
      (f) => `lambda:InvokeFunction on ${logicalId(liveAlias(f))}`,
    );
    const logDelivery = grants.filter((g) => g.startsWith("logs:"));
    expect(logDelivery.every((g) => g.endsWith(" on *"))).toBe(true);
    expect(grants.filter((g) => !g.startsWith("logs:")).sort()).toEqual(
      [
        ...XRAY.map((a) => `${a} on *`),
        "xray:GetSamplingRules on *",
        "xray:GetSamplingTargets on *",
        ...invoke,
        ...Object.values(stack.modelQueue.queues).map((q) => `sqs:SendMessage on ${logicalId(q)}.Arn`),
        `dynamodb:UpdateItem on arn:AWS::Partition:dynamodb:AWS::Region:AWS::AccountId:table/${table}`,
        `events:PutEvents on ${logicalId(stack.projectBus.bus)}.Arn`,
        `s3:GetObject on ${objects("runs/")}`,
        `s3:GetObjectTagging on ${objects("runs/")}`,
        `s3:PutObject on ${objects("results/")}`,
        `s3:PutObjectTagging on ${objects("results/")}`,
      ].sort(),
    );
  });

  it("grants s3:ListBucket only to λ outcome on runs/ keys and to Bedrock's batch role on its jobs' keys", () => {
    const listing = Object.values(template.findResources("AWS::IAM::Policy")).flatMap((p) => {
      const { Roles, PolicyDocument } = (
        p as {
          Properties: {
            Roles: { Ref: string }[];
            PolicyDocument: { Statement: (Statement & { Condition?: unknown })[] };
          };
        }
      ).Properties;
      return PolicyDocument.Statement.filter((s) => [s.Action].flat().includes("s3:ListBucket")).map((s) => ({
        roles: Roles.map((r) => r.Ref),
        action: s.Action,
        condition: s.Condition,
      }));
    });
    expect(listing).toEqual([
      {
        roles: [logicalId(fn.outcome.role as IConstruct)],
        action: "s3:ListBucket",
        condition: { StringLike: { "s3:prefix": ["runs/*"] } },
      },
      {
        roles: [logicalId(stack.batches.rounds.bedrockRole as IConstruct)],
        action: "s3:ListBucket",
        condition: { StringLike: { "s3:prefix": ["batch-jobs/*"] } },
      },
    ]);
    expect(grantsOf(fn.validate.role as IConstruct).some((g) => g.startsWith("s3:ListBucket"))).toBe(false);
  });
});

describe("7. cdk-nag acknowledgments: each matches a finding and has its own reason", () => {
  /** aws-cdk-lib records `Annotation::AwsSolutions-S1`; cdk-nag matches `AwsSolutions-S1`. */
  const ruleIdOf = (key: string) => key.replace(/^annotation::/i, "");

  /** Every AwsSolutions and Serverless acknowledgment in a stack, as construct path → rule id → reason. */
  function acknowledgments(root: IConstruct): { path: string; id: string; reason: string }[] {
    return root.node.findAll().flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) => Object.entries(m.data as Record<string, string>))
        .map(([id, reason]) => [ruleIdOf(id), reason] as const)
        .filter(([id]) => id.startsWith("AwsSolutions-") || id.startsWith("Serverless-"))
        .map(([id, reason]) => ({ path: c.node.path, id, reason })),
    );
  }

  /** The acknowledgments cdk-nag consulted and found: the (ancestor path, rule id) of each suppressed finding. */
  function usedAcknowledgments(s: Synthesized): Set<string> {
    const used = new Set<string>();
    const proto = NagPack.prototype as unknown as {
      isAcknowledged: (node: IConstruct, ruleId: string) => boolean;
    };
    const original = proto.isAcknowledged;
    proto.isAcknowledged = (node: IConstruct, ruleId: string) => {
      for (let current: IConstruct | undefined = node; current; current = current.node.scope) {
        const here = current.node.metadata.some(
          (m) =>
            m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY &&
            Object.keys(m.data as Record<string, string>)
              .map(ruleIdOf)
              .includes(ruleId),
        );
        if (here) {
          used.add(`${current.node.path} ${ruleId}`);
          return true;
        }
      }
      return false;
    };
    try {
      new AwsSolutionsChecks(s.app).validateScope(s.stack);
      new ServerlessChecks(s.app).validateScope(s.stack);
    } finally {
      proto.isAcknowledged = original;
    }
    return used;
  }

  it.each(ENV_NAMES)("%s: no stale acknowledgment", (env) => {
    const s = synthesized[env];
    const used = usedAcknowledgments(s);
    const stale = acknowledgments(s.stack)
      .map((a) => `${a.path} ${a.id}`)
      .filter((a) => !used.has(a));
    expect(stale).toEqual([]);
  });

  it("catches a stale acknowledgment (the check is live)", () => {
    const s = synthesizeFresh("dev");
    acknowledge(s.stack.storage.table, { id: "AwsSolutions-S1", reason: "stale on purpose" });
    const used = usedAcknowledgments(s);
    expect(used.size).toBeGreaterThan(10);
    expect(used.has(`${s.stack.storage.table.node.path} AwsSolutions-S1`)).toBe(false);
  });

  it.each(ENV_NAMES)("%s: no reason is shared by two different rules", (env) => {
    const byReason = new Map<string, Set<string>>();
    for (const a of acknowledgments(synthesized[env].stack)) {
      // One finding acknowledged on several resources for one cause keeps one reason (the resource
      // it names differs, `<Logical.Arn>`); two different findings may not share one.
      const finding = a.id.replace(/<[^>]*>/g, "<resource>");
      byReason.set(a.reason, (byReason.get(a.reason) ?? new Set()).add(finding));
    }
    const shared = [...byReason]
      .filter(([, ids]) => ids.size > 1)
      .map(([reason, ids]) => `${reason}: ${[...ids].join(", ")}`);
    expect(shared).toEqual([]);
  });
});

describe("8. one Node version story", () => {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    engines: { node: string };
  };
  const enginesMajor = Number(/(\d+)/.exec(pkg.engines.node)?.[1]);

  it("bundles for the oldest Node that engines allow, so the bundles run where tests run", () => {
    expect(BUNDLE_TARGET).toBe(`node${enginesMajor}`);
  });

  it("runs every redraft function on the one pinned runtime, no older than engines (README, Deploying)", () => {
    for (const env of ENV_NAMES) {
      const { stack, template } = synthesized[env];
      const fns = [
        stack.functions.validate,
        stack.functions.correct,
        stack.functions.revalidate,
        stack.functions.judge,
        stack.functions.outcome,
        stack.triggers.starter,
        stack.finalizer.function,
      ];
      for (const fn of fns) {
        expect(template.toJSON().Resources[logicalId(fn)].Properties.Runtime).toBe(LAMBDA_RUNTIME.name);
      }
    }
    expect(Number(/nodejs(\d+)/.exec(LAMBDA_RUNTIME.name)?.[1])).toBeGreaterThanOrEqual(enginesMajor);
  });
});

describe("9. cold starts: no source maps parsed unless asked for", () => {
  type Fn = { Properties: { Environment?: { Variables?: Record<string, unknown> } } };
  const nodeOptionsOf = (template: Template) =>
    Object.values(template.findResources("AWS::Lambda::Function")).map(
      (f) => (f as Fn).Properties.Environment?.Variables?.NODE_OPTIONS,
    );

  it.each(ENV_NAMES)("%s: no function runs with --enable-source-maps by default", (env) => {
    for (const options of nodeOptionsOf(synthesized[env].template))
      expect(String(options ?? "")).not.toContain("--enable-source-maps");
  });

  /** One function built by redraftFunction in a stack of its own, with `context` on the app. */
  function oneFunction(context: Record<string, string>, environment: Record<string, string>) {
    const app = new App({ context: { ...context, "aws:cdk:bundling-stacks": [] } });
    const stack = new Stack(app, "One");
    redraftFunction(stack, "validate", {
      description: "probe",
      timeout: Duration.seconds(10),
      environment,
      envSchemas: [],
      config: loadConfig("dev"),
      modelSdk: "none",
    });
    return nodeOptionsOf(Template.fromStack(stack))[0];
  }

  it("turns them on with -c sourceMaps=true, keeping a caller's other NODE_OPTIONS", () => {
    expect(oneFunction({}, { NODE_OPTIONS: "--enable-source-maps" })).toBeUndefined();
    expect(oneFunction({}, { NODE_OPTIONS: "--max-old-space-size=512 --enable-source-maps" })).toBe(
      "--max-old-space-size=512",
    );
    expect(oneFunction({ [SOURCE_MAPS_CONTEXT]: "true" }, {})).toBe("--enable-source-maps");
    expect(oneFunction({ [SOURCE_MAPS_CONTEXT]: "true" }, { NODE_OPTIONS: "--max-old-space-size=512" })).toBe(
      "--max-old-space-size=512 --enable-source-maps",
    );
  });
});
