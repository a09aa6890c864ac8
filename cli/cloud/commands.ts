import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import type { DraftSource } from "../../app/inputs.js";
import { UsageError } from "../../app/inputs.js";
import { type ReviewDecision, reviewRun } from "../../app/review.js";
import { resolveRun } from "../../app/run-id.js";
import { startFor } from "../../functions/start.js";
import { SubmissionEvent } from "../../shared/events.js";
import { buildRunResult, type RunResult } from "../../shared/loop/run.js";
import { isActiveStatus, RunStatusSchema } from "../../shared/store/types.js";
import { writeBestDraft } from "../export.js";
import type { SourcedResult } from "../format.js";
import { type CloudOptions, resolveResources } from "./resources.js";
import { CloudRuntime } from "./runtime.js";

const out = (text: string) => process.stdout.write(`${text}\n`);
const say = (text: string) => process.stderr.write(`${text}\n`);

/** The deployment the global options name, through the SDK's standard chain. */
export async function openCloud(opts: CloudOptions): Promise<CloudRuntime> {
  return new CloudRuntime(await resolveResources(opts));
}

/** `redraft --stack S runs`: the deployment's runs, newest first, as offline. */
export async function cloudRuns(
  opts: CloudOptions,
  cmd: { status?: string; draft?: string; limit: number; json?: boolean },
): Promise<void> {
  const cloud = await openCloud(opts);
  const { runsTable } = await import("../format.js");
  const runs = await cloud.runs.listRuns({
    ...(cmd.status && { status: RunStatusSchema.parse(cmd.status) }),
    ...(cmd.draft && { draftId: cmd.draft }),
    limit: cmd.limit,
  });
  if (cmd.json) for (const r of runs) out(JSON.stringify(r));
  else out(runs.length ? runsTable(runs) : "No runs.");
}

/** `redraft --stack S show <runId>`: the offline timeline, the execution path from GetExecutionHistory, and the console link. */
export async function cloudShow(opts: CloudOptions, runId: string, cmd: { json?: boolean }): Promise<void> {
  const cloud = await openCloud(opts);
  if (runId.startsWith("b-")) {
    const batch = await cloud.batches.get(runId);
    if (batch) {
      out(cmd.json ? JSON.stringify(batch) : JSON.stringify(batch, null, 2));
      return;
    }
  }
  const { loadRunEvidence, timeline } = await import("../show.js");
  const run = await resolveRun(cloud.runs, runId, cloud.where);
  const result = await buildRunResult(run.runId, cloud.deps);
  const execution = await cloud.history(run.runId);
  const consoleUrl = cloud.consoleUrl(run.runId);
  if (cmd.json) {
    out(JSON.stringify({ ...result, execution, ...(consoleUrl && { consoleUrl }) }));
    return;
  }
  const evidence = await loadRunEvidence(result, cloud.deps);
  out(timeline(result, run, evidence, execution));
  if (consoleUrl) out(`\nIn the Step Functions console: ${consoleUrl}`);
}

/** `redraft --stack S export <runId>`: the run's best draft, from the bucket. */
export async function cloudExport(opts: CloudOptions, runId: string, cmd: { out?: string }): Promise<void> {
  const cloud = await openCloud(opts);
  const run = await resolveRun(cloud.runs, runId, cloud.where);
  await writeBestDraft(run, cloud.deps, cmd.out);
}

/** `redraft --stack S batches`: the deployment's batch records, newest first. */
export async function cloudBatches(
  opts: CloudOptions,
  cmd: { limit: number; json?: boolean },
): Promise<void> {
  const cloud = await openCloud(opts);
  const { batchesTable } = await import("../batch.js");
  const records = await cloud.batches.list(cmd.limit);
  if (cmd.json) for (const r of records) out(JSON.stringify(r));
  else out(records.length ? batchesTable(records) : "No batches.");
}

/** How long `review … edit` follows the edited draft's run before saying where it stands. */
const EDIT_WAIT_MS = 15 * 60 * 1000;
const POLL_MS = 2000;

/**
 * Submits a draft as a client does (`Draft Submitted` on the bus, the draft inline) and, when `wait`
 * is above 0, follows its run to an outcome for up to `wait` ms. The run id is the execution name λ start gives the event, computed from the
 * event id PutEvents returns, so nothing needs listing to find it.
 */
export async function submitByEvent(
  cloud: CloudRuntime,
  source: DraftSource,
  extra: { parentRunId?: string },
  wait: number,
  events: EventBridgeClient = new EventBridgeClient({}),
): Promise<RunResult | { runId: string }> {
  const bus = cloud.resources.bus;
  if (!bus) throw new UsageError("the stack's bus is not known: pass --bus (or --stack)");
  // Text that does not parse goes as text: Validate rejects it with its reason, as it would an upload.
  let draft: unknown = source.body;
  try {
    draft = JSON.parse(source.body);
  } catch {
    // kept as text
  }
  const detail = { draft, ...extra };
  const { Entries, FailedEntryCount } = await events.send(
    new PutEventsCommand({
      Entries: [
        {
          Source: SubmissionEvent.source,
          DetailType: SubmissionEvent.detailType,
          Detail: JSON.stringify(detail),
          EventBusName: bus,
        },
      ],
    }),
  );
  const eventId = Entries?.[0]?.EventId;
  if (FailedEntryCount || !eventId)
    throw new Error(`${source.label} was not put on ${bus}: ${Entries?.[0]?.ErrorCode ?? "no event id"}`);
  const { name: runId } = startFor({
    id: eventId,
    source: SubmissionEvent.source,
    "detail-type": SubmissionEvent.detailType,
    detail,
  } as never);
  return wait > 0 ? followRun(cloud, runId, source.label, wait) : { runId };
}

/** Polls a run until it has an outcome (or `wait` ms passed), then reads it as `redraft run` prints it. */
async function followRun(
  cloud: CloudRuntime,
  runId: string,
  label: string,
  wait: number,
): Promise<RunResult> {
  const deadline = Date.now() + wait;
  for (;;) {
    const run = await cloud.runs.getRun(runId);
    if (run && !isActiveStatus(run.status)) return buildRunResult(runId, cloud.deps, run);
    if (Date.now() > deadline)
      throw new Error(
        `run ${runId} of ${label} has not ended after ${Math.round(wait / 60000)} min (${run?.status ?? "not registered yet"})`,
      );
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** `redraft --stack S review <runId> approve|reject|edit [file]`: the same decision as offline, on the deployment's records. */
export async function cloudReview(
  opts: CloudOptions,
  runId: string,
  decision: ReviewDecision,
  cmd: { file?: string; note?: string; reviewer: string },
): Promise<string> {
  const cloud = await openCloud(opts);
  const run = await resolveRun(cloud.runs, runId, cloud.where);
  return reviewRun(cloud, run.runId, decision, {
    ...(cmd.file && { file: cmd.file }),
    ...(cmd.note && { note: cmd.note }),
    reviewer: cmd.reviewer,
    submit: async (source, parentRunId) =>
      (await submitByEvent(cloud, source, { parentRunId }, EDIT_WAIT_MS)) as RunResult,
  });
}

/**
 * `redraft --stack S run <paths…>`: each draft submitted as a client does (`Draft Submitted`, the
 * only trigger whose run id a client can know without a versioned upload's VersionId), then followed
 * to its outcome and printed as offline (`--json` lines, or the results table). `--no-wait` prints
 * each run id as it is submitted and returns.
 */
export async function cloudRun(
  opts: CloudOptions,
  paths: string[],
  cmd: { json?: boolean; wait: boolean; concurrency: number },
): Promise<void> {
  const [{ collectDrafts }, { jsonLine, ResultsTable }, { default: pLimit }] = await Promise.all([
    import("../../app/inputs.js"),
    import("../format.js"),
    import("p-limit"),
  ]);
  const sources = await collectDrafts(paths);
  if (sources.length === 0)
    throw new UsageError(`no drafts found in ${paths.join(", ")} (looking for .json, .jsonl files)`);
  const cloud = await openCloud(opts);
  const limit = pLimit(cmd.concurrency);
  const results: SourcedResult[] = [];
  await Promise.all(
    sources.map((source) =>
      limit(async () => {
        // A path that could not be read never reaches the stack: said here, as offline it is a rejected line.
        if (source.rejectWith) {
          say(`redraft: ${source.rejectWith.message}`);
          return;
        }
        const submitted = await submitByEvent(cloud, source, {}, cmd.wait ? EDIT_WAIT_MS : 0);
        if (!("status" in submitted)) {
          out(
            cmd.json
              ? JSON.stringify({ runId: submitted.runId, source: source.label })
              : `${source.label}: run ${submitted.runId}`,
          );
          return;
        }
        const result = { ...submitted, source: source.label };
        if (cmd.json) out(jsonLine(result));
        results.push(result);
      }),
    ),
  );
  if (cmd.wait && !cmd.json && results.length > 0) {
    const table = new ResultsTable();
    for (const r of results) table.add(r);
    out(table.render());
  }
}
