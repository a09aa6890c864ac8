import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { aslFromTemplate } from "../../contracts/asl.js";
import { BatchEvents, SubmissionEvent } from "../../contracts/events.js";
import { BatchStateNames } from "../../contracts/state-names.js";
import { createStartHandler, startFor } from "../../functions/start.js";
import { environments } from "../../infra/config.js";
import { logicalId, synthesize } from "./synth.js";

/**
 * The batch state machine as CDK synthesizes it: a second state machine beside the per-draft one,
 * a Distributed Map reading the item list from S3, each item a `.sync:2` child execution of the
 * per-draft state machine, its limits from the environment's config, and triggers that start it.
 */

/** ASL states are read as the JSON they are. */
type Json = ReturnType<typeof JSON.parse>;

const { stack, template } = synthesize("dev");
const prod = synthesize("prod");
const batchAsl = (s = stack, t = template) =>
  aslFromTemplate(t.toJSON(), { stateMachineLogicalId: logicalId(s.batches.stateMachine) });

describe("the batch state machine", () => {
  it("is a second Standard state machine", () => {
    template.resourceCountIs("AWS::StepFunctions::StateMachine", 2);
    template.hasResourceProperties("AWS::StepFunctions::StateMachine", {
      StateMachineName: "redraft-dev-batch",
      StateMachineType: "STANDARD",
    });
  });

  it("runs a DISTRIBUTED Map with an S3 ItemReader whose items start the per-draft state machine with .sync:2", () => {
    const asl = batchAsl();
    const map = asl.States[BatchStateNames.RunItems] as Json;
    expect(map.Type).toBe("Map");
    expect(map.ItemProcessor.ProcessorConfig).toEqual({ Mode: "DISTRIBUTED", ExecutionType: "STANDARD" });
    expect(map.ItemReader).toMatchObject({
      Resource: "arn:aws:states:::s3:getObject",
      ReaderConfig: { InputType: "JSONL" },
      Parameters: { "Key.$": "$.prepared.itemsKey" },
    });
    expect(map.ResultWriter.Resource).toBe("arn:aws:states:::s3:putObject");
    const child = map.ItemProcessor.States[BatchStateNames.RunDraft];
    expect(child.Resource).toBe("arn:aws:states:::states:startExecution.sync:2");
    expect(child.Parameters.StateMachineArn).toContain(logicalId(stack.workflow.stateMachine));
    // Deterministic child names: a retried item never runs twice.
    expect(child.Parameters["Name.$"]).toBe("States.Format('{}-{}', $.batchId, $.line)");
    expect(child.Catch[0].ErrorEquals).toEqual(["StepFunctions.ExecutionAlreadyExistsException"]);
  });

  it("retries a throttled child start and takes an existing child as a result, wherever a child starts", () => {
    // Every startExecution in the machine, nested Maps included (RunItems, and the batch-priced RunOnDemand).
    const starts: [string, Json][] = [];
    const walk = (states: Record<string, Json>) => {
      for (const [name, state] of Object.entries(states)) {
        if (String(state.Resource ?? "").startsWith("arn:aws:states:::states:startExecution"))
          starts.push([name, state]);
        if (state.ItemProcessor) walk(state.ItemProcessor.States);
        for (const branch of state.Branches ?? []) walk(branch.States);
      }
    };
    walk(batchAsl().States);
    expect(starts.map(([name]) => name).sort()).toEqual(
      [BatchStateNames.RunDraft, BatchStateNames.RunDraftOnDemand].sort(),
    );
    for (const [name, state] of starts) {
      expect(state.Retry, name).toEqual([
        expect.objectContaining({
          ErrorEquals: [
            "StepFunctions.ExecutionLimitExceededException",
            "StepFunctions.AWSStepFunctionsException",
          ],
          MaxAttempts: 6,
          JitterStrategy: "FULL",
        }),
      ]);
      expect(
        state.Catch.map((c: Json) => c.ErrorEquals),
        name,
      ).toEqual([["StepFunctions.ExecutionAlreadyExistsException"]]);
    }
  });

  it("takes MaxConcurrency and ToleratedFailurePercentage from each environment's config", () => {
    for (const [s, t, env] of [
      [stack, template, environments.dev],
      [prod.stack, prod.template, environments.prod],
    ] as const) {
      const map = batchAsl(s, t).States[BatchStateNames.RunItems] as Record<string, unknown>;
      expect(map.MaxConcurrency).toBe(env.batchConcurrency);
      expect(map.ToleratedFailurePercentage).toBe(env.batchToleratedFailurePercentage);
    }
    expect(environments.prod.batchConcurrency).not.toBe(environments.dev.batchConcurrency);
  });

  it("creates the batch record with a conditional put and ends a repeated delivery there", () => {
    const create = batchAsl().States[BatchStateNames.CreateBatch] as Json;
    expect(create.Resource).toBe("arn:aws:states:::dynamodb:putItem");
    expect(create.Parameters.ConditionExpression).toBe("attribute_not_exists(#pk)");
    // The pricing is decided before (PricingGiven?), so the record carries it from its first write.
    expect(create.Parameters.Item.pricing).toEqual({ "S.$": "$.pricing" });
    expect(create.Catch[0]).toMatchObject({
      ErrorEquals: ["DynamoDB.ConditionalCheckFailedException"],
      Next: BatchStateNames.BatchAlreadyStarted,
    });
  });

  it("aggregates whichever way the items ended, then publishes Batch Completed", () => {
    const asl = batchAsl();
    for (const name of [BatchStateNames.PrepareItems, BatchStateNames.RunItems]) {
      const state = asl.States[name] as Json;
      expect(state.Catch).toContainEqual(
        expect.objectContaining({ ErrorEquals: ["States.ALL"], Next: BatchStateNames.AggregateBatch }),
      );
    }
    const announce = asl.States[BatchStateNames.AnnounceBatch] as Json;
    expect(announce.Parameters.Entries[0].DetailType).toBe(BatchEvents.completed);
  });

  it("lets each child's Validate read its item, and λ batch only its own prefixes", () => {
    const policies = Object.values(template.findResources("AWS::IAM::Policy")) as {
      Properties: {
        Roles: { Ref: string }[];
        PolicyDocument: { Statement: { Action: unknown; Resource: unknown }[] };
      };
    }[];
    const statementsOf = (role: string) =>
      policies
        .filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith(role)))
        .flatMap((p) => p.Properties.PolicyDocument.Statement);
    const reads = (role: string, prefix: string) =>
      statementsOf(role).some(
        (st) =>
          JSON.stringify(st.Action).includes("s3:GetObject") &&
          JSON.stringify(st.Resource).includes(`/${prefix}*`),
      );
    expect(reads("FunctionsvalidateServiceRole", "batch-items/")).toBe(true);
    expect(reads("BatchesbatchServiceRole", "batches/")).toBe(true);
    // λ batch never reads the runs' own objects or the uploads of single drafts.
    const batchResources = JSON.stringify(statementsOf("BatchesbatchServiceRole").map((st) => st.Resource));
    expect(batchResources).not.toMatch(/\/(runs|results|drafts)\/\*/);
  });
});

describe("batch retention", () => {
  it("expires manifests, items, results and Bedrock jobs' files after the environment's retention days, like uploads", () => {
    const rules = Object.values(template.findResources("AWS::S3::Bucket"))
      .flatMap((b) => (b as Json).Properties.LifecycleConfiguration?.Rules ?? [])
      .filter((r: Json) => String(r.Prefix ?? "").startsWith("batch"));
    expect(rules.map((r: Json) => r.Prefix).sort()).toEqual([
      "batch-items/",
      "batch-jobs/",
      "batch-results/",
      "batches/",
    ]);
    for (const rule of rules) {
      expect(rule.ExpirationInDays).toBe(environments.dev.retentionDays);
      expect(rule.TagFilters).toBeUndefined();
    }
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          RETENTION_DAYS: String(environments.dev.retentionDays),
          TABLE_NAME: Match.anyValue(),
        }),
      },
      Description: Match.stringLikeRegexp("batch"),
    });
  });
});

describe("batch triggers", () => {
  it("sends uploads under batches/ and Batch Submitted events to λ start, which knows the batch state machine", () => {
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: { detail: { object: { key: [{ prefix: "batches/" }] } } },
    });
    template.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: { source: [SubmissionEvent.source], "detail-type": [BatchEvents.submitted] },
    });
    template.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          BATCH_STATE_MACHINE_ARN: { Ref: logicalId(stack.batches.stateMachine) },
        }),
      },
    });
  });

  const upload = (key: string, version: string, id = "evt-1") => ({
    id,
    source: "aws.s3",
    detail: { bucket: { name: "b" }, object: { key, "version-id": version } },
  });

  it("names a batch after its manifest version: a repeated delivery is the same batch, a new version a new one", () => {
    const first = startFor(upload("batches/m.jsonl", "v1"));
    expect(first.machine).toBe("batch");
    expect(first.input).toEqual({
      batchId: first.name,
      // An upload's key arrives URL-encoded: only its own notification may have it decoded.
      manifestRef: { bucket: "b", key: "batches/m.jsonl", versionId: "v1", keyForm: "notification" },
    });
    expect(startFor(upload("batches/m.jsonl", "v1", "evt-redelivered")).name).toBe(first.name);
    expect(startFor(upload("batches/m.jsonl", "v2")).name).not.toBe(first.name);
    expect(startFor(upload("drafts/m.json", "v1")).machine).toBe("draft");
    const event = {
      id: "e-9",
      source: SubmissionEvent.source,
      "detail-type": BatchEvents.submitted,
      detail: { manifestRef: { bucket: "b", key: "batches/m.jsonl", versionId: "v1" } },
    };
    // The same manifest version by event or by upload is one batch.
    expect(startFor(event).name).toBe(first.name);
  });

  it("starts the batch state machine for a batch, and fails loudly when none is configured", async () => {
    const sent: { stateMachineArn?: string }[] = [];
    const client = {
      send: async (command: { input: { stateMachineArn?: string } }) => sent.push(command.input),
    };
    const start = createStartHandler({
      client: client as never,
      stateMachineArn: "arn:draft",
      batchStateMachineArn: "arn:batch",
    });
    await start(upload("batches/m.jsonl", "v1"));
    await start(upload("drafts/d.json", "v1"));
    expect(sent.map((s) => s.stateMachineArn)).toEqual(["arn:batch", "arn:draft"]);
    const without = createStartHandler({ client: client as never, stateMachineArn: "arn:draft" });
    await expect(without(upload("batches/m.jsonl", "v1"))).rejects.toThrow(/no batch state machine/);
  });
});

describe("the batch machine's role: its children and its prefixes only", () => {
  type Json = ReturnType<typeof JSON.parse>;
  /** A resource as text: `<Logical.Attr>`, `<Logical>`, a joined ARN with its tokens so written. */
  const text = (r: Json): string =>
    typeof r === "string"
      ? r
      : r["Fn::Join"]
        ? r["Fn::Join"][1].map(text).join("")
        : r.Ref
          ? `<${r.Ref}>`
          : r["Fn::GetAtt"]
            ? `<${r["Fn::GetAtt"].join(".")}>`
            : JSON.stringify(r);
  const grants = (s = stack, t = template) => {
    const role = logicalId(s.batches.stateMachine.role as never);
    return (Object.values(t.findResources("AWS::IAM::Policy")) as Json[])
      .filter((p) => p.Properties.Roles.some((r: Json) => r.Ref === role))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .flatMap((st: Json) =>
        [st.Action]
          .flat()
          .flatMap((a: string) => [st.Resource].flat().map((r: Json) => `${a} on ${text(r)}`)),
      );
  };

  it.each([
    ["dev", stack, template],
    ["prod", prod.stack, prod.template],
  ] as const)(
    "%s: Describe/Stop only the per-draft executions named b-…, S3 only under batch-items/ and batch-results/ (and the Publish states' runs/ → results/)",
    (_, s, t) => {
      const all = grants(s, t);
      const bucket = `<${logicalId(s.storage.bucket)}.Arn>`;
      const perDraft = logicalId(s.workflow.stateMachine);
      const own = `arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:${JSON.stringify({
        "Fn::Select": [6, { "Fn::Split": [":", { Ref: logicalId(s.batches.stateMachine) }] }],
      })}`;
      const states = all.filter((g) => g.startsWith("states:")).sort();
      expect(states).toEqual(
        [
          // The Distributed Map's own: the Map Run of this machine's executions.
          `states:DescribeExecution on ${own}:*`,
          `states:StopExecution on ${own}:*`,
          `states:RedriveExecution on ${own}/*:*`,
          `states:StartExecution on <${logicalId(s.batches.stateMachine)}>`,
          `states:DescribeExecution on arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${perDraft}.Name>:b-*`,
          `states:StartExecution on <${perDraft}>`,
          `states:StopExecution on arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:<${perDraft}.Name>:b-*`,
        ].sort(),
      );
      const s3 = all.filter((g) => g.startsWith("s3:")).sort();
      expect(s3).toEqual(
        [
          `s3:GetObject on ${bucket}/batch-items/*`,
          ...["AbortMultipartUpload", "GetObject", "ListMultipartUploadParts", "PutObject"].map(
            (a) => `s3:${a} on ${bucket}/batch-results/*`,
          ),
          `s3:GetObject on ${bucket}/runs/*`,
          `s3:GetObjectTagging on ${bucket}/runs/*`,
          `s3:PutObject on ${bucket}/results/*`,
          `s3:PutObjectTagging on ${bucket}/results/*`,
        ].sort(),
      );
    },
  );

  it("children are started with the parent's execution id, so the console links them", () => {
    const asl = JSON.stringify(batchAsl());
    expect(asl).toContain('"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$":"$$.Execution.Id"');
  });
});
