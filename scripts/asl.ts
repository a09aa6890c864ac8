/**
 * `npm run asl`: synthesizes the CDK app and writes the per-draft state machine's definition to
 * `contracts/state-machine.asl.json`, the one file every local path executes (the local runtime,
 * `redraft run`, `npm start`, `correctDraft`, the workflow tests), and the batch state machine's to
 * `contracts/batch-state-machine.asl.json` (`redraft batch`). `--out <file>` / `--batch-out <file>`
 * write elsewhere (tests/infra/asl-artifact.test.ts compares fresh ones with the committed files).
 *
 * Environment-specific values become `${Kind:Name}` placeholders that the loader
 * (local/state-machine.ts) fills in: `${FunctionArn:Functionsvalidate}`, `${TableName:StorageRuns}`,
 * `${BucketName:StorageDrafts}`, `${EventBusArn:BusProjectBus}`. The name is the logical id without
 * CDK's hash, so a placeholder changes only when the construct does.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { App, type CfnElement } from "aws-cdk-lib";
import { type AslDefinition, type AslState, aslFromTemplate, type ResourceRef } from "../contracts/asl.js";
import { loadConfig } from "../infra/config.js";
import { RedraftStack, stackName } from "../infra/stack.js";

const ROOT = new URL("..", import.meta.url);
const ARTIFACT = "contracts/state-machine.asl.json";
const BATCH_ARTIFACT = "contracts/batch-state-machine.asl.json";

/** The kind a reference stands for, by resource type: what the loader knows how to fill. */
const KINDS: Record<string, string> = {
  "AWS::Lambda::Function": "Function",
  // A function's `live` alias (infra/constructs/functions.ts): its `Ref` is the alias's ARN.
  "AWS::Lambda::Alias": "FunctionAlias",
  "AWS::DynamoDB::Table": "Table",
  "AWS::S3::Bucket": "Bucket",
  "AWS::Events::EventBus": "EventBus",
  "AWS::StepFunctions::StateMachine": "StateMachine",
  "AWS::SQS::Queue": "Queue",
};

/** `${FunctionArn:Functionsvalidate}`: the kind, the attribute (`Name` for a `Ref`), the logical id without its hash. */
function placeholder(ref: ResourceRef): string {
  const kind = KINDS[ref.type] ?? ref.type.replaceAll("::", "");
  // A state machine's or an alias's `Ref` is its ARN, a queue's its URL; every other `Ref` here is a name.
  const byRef =
    ref.type === "AWS::StepFunctions::StateMachine" || ref.type === "AWS::Lambda::Alias"
      ? "Arn"
      : ref.type === "AWS::SQS::Queue"
        ? "Url"
        : "Name";
  const attribute =
    ref.attribute === undefined ? byRef : ref.attribute.endsWith("Name") ? "Name" : ref.attribute;
  return `\${${kind}${attribute}:${ref.logicalId.replace(/[0-9A-F]{8}$/, "")}}`;
}

/** The order a person reads a state in: what it is, what it does, how it fails, where it goes. */
const STATE_KEYS = [
  "Type",
  "Comment",
  "QueryLanguage",
  "Resource",
  "Parameters",
  "Result",
  "InputPath",
  "OutputPath",
  "ResultSelector",
  "ResultPath",
  "TimeoutSeconds",
  "HeartbeatSeconds",
  "Choices",
  "Default",
  "Retry",
  "Catch",
  "Error",
  "Cause",
  "Next",
  "End",
];
const TOP_KEYS = ["Comment", "QueryLanguage", "StartAt", "TimeoutSeconds", "States"];

/** `keys` first in that order, any other key after them alphabetically. */
function ordered<T extends Record<string, unknown>>(value: T, keys: readonly string[]): T {
  const rank = (k: string) => (keys.includes(k) ? keys.indexOf(k) : keys.length);
  const sorted = Object.keys(value).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(sorted.map((k) => [k, value[k]])) as T;
}

/** Each state's keys in reading order, into a Map's item processor too. */
function orderedStates(states: Record<string, AslState>): Record<string, AslState> {
  return Object.fromEntries(
    Object.entries(states).map(([name, state]) => {
      const processor = state.ItemProcessor as { States?: Record<string, AslState> } | undefined;
      const inner = processor?.States
        ? { ItemProcessor: { ...processor, States: orderedStates(processor.States) } }
        : {};
      return [name, ordered<AslState>({ ...state, ...inner }, STATE_KEYS)];
    }),
  );
}

/** Synthesizes the dev stack (bundling skipped, cdk.json's context) and returns both state machines' ASL. */
async function synthesizeAsl(): Promise<{ perDraft: AslDefinition; batch: AslDefinition }> {
  const { context } = JSON.parse(await readFile(new URL("cdk.json", ROOT), "utf8")) as {
    context: Record<string, unknown>;
  };
  const outdir = await mkdtemp(join(tmpdir(), "redraft-synth-"));
  try {
    const app = new App({ outdir, context: { ...context, "aws:cdk:bundling-stacks": [] } });
    const config = loadConfig("dev");
    const stack = new RedraftStack(app, stackName(config.envName), { config });
    const template = app.synth().getStackArtifact(stack.artifactId).template;
    // Each state machine by its construct: the stack holds two.
    const extract = (machine: typeof stack.workflow.stateMachine): AslDefinition => {
      const stateMachineLogicalId = stack.getLogicalId(machine.node.defaultChild as CfnElement);
      const asl = aslFromTemplate(template, { stateMachineLogicalId, resolve: placeholder });
      return ordered({ ...asl, States: orderedStates(asl.States) }, TOP_KEYS);
    };
    return { perDraft: extract(stack.workflow.stateMachine), batch: extract(stack.batches.stateMachine) };
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
}

/** The ASL as 2-space JSON, then as Biome formats JSON, so `npm run lint` accepts the file as written. */
function format(asl: AslDefinition, artifact: string): string {
  const json = `${JSON.stringify(asl, null, 2)}\n`;
  return execFileSync("npx", ["biome", "format", `--stdin-file-path=${artifact}`], {
    cwd: ROOT,
    input: json,
    encoding: "utf8",
  });
}

const { values } = parseArgs({ options: { out: { type: "string" }, "batch-out": { type: "string" } } });
const { perDraft, batch } = await synthesizeAsl();
const out = values.out ?? new URL(ARTIFACT, ROOT).pathname;
const batchOut = values["batch-out"] ?? new URL(BATCH_ARTIFACT, ROOT).pathname;
await writeFile(out, format(perDraft, ARTIFACT));
await writeFile(batchOut, format(batch, BATCH_ARTIFACT));
console.error(`wrote ${values.out ?? ARTIFACT} and ${values["batch-out"] ?? BATCH_ARTIFACT}`);
