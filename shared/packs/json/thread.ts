/**
 * A json draft's check (compile, repair, Ajv, findings, score units) on a thread of its own, under a
 * budget of CPU time the operating system counts.
 *
 * The static guards bound what a schema may ask (cost.ts: its size with references unfolded; data-cost.ts:
 * the sub-schema evaluations a recursive schema may do on this content; regex-guard.ts: its patterns), but
 * not what one evaluation costs: a `format` over a long string, `uniqueItems` or a long `const` over large
 * data, a huge `enum`, many keywords on every element. Ajv's code cannot be interrupted, and on the
 * validating thread nothing else runs while it does. So inside a deferral (shared/deferred.ts: how the
 * validate and revalidate steps check a draft) the json pack does not check a draft that may be costly
 * in place (`riskyDraft`: a recursive schema counting many evaluations on it, or a large schema over
 * large content; every draft with the pack's `thread: "always"`): it asks one question, "this draft's
 * outcome", which a thread of a small pool answers while the event loop serves other drafts.
 * The host reads the thread's CPU time (`worker.cpuUsage()`, the kernel's count for that thread: the same
 * idle and loaded) while the check runs; past the budget (the json pack's `cpuBudgetMs`, default
 * DEFAULT_JSON_CPU_BUDGET_MS) the thread is terminated and the draft alone is rejected `invalid_schema`
 * (`too_slow`). The thread checks inside a deferral of its own, so its patterns go to its own pattern pool,
 * each within its budget and the draft within its budget for all of them, as on the validating thread.
 *
 * Outside a deferral (a synchronous caller: `inspectWithPack`, the CLI's `schema` commands), and for an
 * ordinary draft (no round trip between threads to pay), the check runs in place, as before. The verdicts are the same: the thread runs the same code on a structured
 * clone of the content (plain JSON data only: anything else is checked in place).
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { isMainThread, type MessagePort, parentPort, Worker, workerData } from "node:worker_threads";
import { activeDeferral, withDeferral } from "../../deferred.js";
import type { Draft, Repair } from "../../draft.js";
import { InvalidSchemaError } from "../../errors.js";
import { DEFAULT_JSON_CPU_BUDGET_MS } from "../../loop-settings.js";
import type { Finding } from "../../pack.js";
import { compileJsonSchema, RegisteredSchemas } from "./compile.js";
import type { CompiledJsonSchema } from "./compiled.js";
import { draftEvaluations, isDraftCostGuarded } from "./data-cost.js";
import { SchemaTooSlowError, TOO_SLOW } from "./regex-guard.js";
import type { RepairMode } from "./repair.js";

/** What the json pack's hooks answer for one draft, computed at once (in place or on a thread). */
export interface JsonOutcome {
  /** The content after repair: the draft's own content object when nothing was repaired. */
  readonly content: unknown;
  readonly repairs: Repair[];
  /** The rule's findings on the repaired content. */
  readonly findings: Finding[];
  /** The rule's findings on the content as it came, when something was repaired (the report's beforeRepair). */
  readonly before?: Finding[];
  /** The score's units of the repaired content, when a finding may need them (not info). */
  readonly units?: number;
}

/**
 * The json rule's findings for `content`: Ajv's, then where repair stepped aside (when it ran), then what
 * the schema asks for that is not checked. One function for the thread and the in-place check.
 */
export function ruleFindings(schema: CompiledJsonSchema, content: unknown, mode: RepairMode): Finding[] {
  const findings = schema.findings(content);
  // Where repair ran but stepped aside, and what the schema asks for that is not checked, the report
  // says (info: neither changes a verdict or a score).
  const notes = mode !== "off" && findings.length > 0 ? schema.repairNotes(content) : [];
  const warnings = schema.warnings.length > 0 ? schema.warningFindings() : [];
  return notes.length + warnings.length > 0 ? [...findings, ...notes, ...warnings] : findings;
}

// ---- the thread ----------------------------------------------------------------------------------

const THREAD_FLAG = "redraftJsonThread";
/** The most threads checking json drafts at once: one hostile draft holds one, the others go on. */
const MAX_THREADS = 2;
/** How often the host reads a busy thread's CPU time, in ms of wall-clock time. */
const WATCH_EVERY_MS = 10;
/**
 * Wall-clock time a check may take, as a multiple of its CPU budget: a thread waiting (on a pattern
 * worker, whose time is not its own) spends no CPU, so its wait is bounded here (regex-guard.ts bounds
 * each pattern test in place, not their sum).
 */
const WALL_FACTOR = 10;
/** The longest a thread may take to load (module graph, Ajv), not counted in any draft's budget. */
const THREAD_START_MS = 60_000;
/** Schemas the thread keeps parsed by their text (each compiled once by compile.ts's cache). */
const MAX_PARSED = 500;

interface Job {
  readonly schemaText: string;
  readonly registeredText: string | undefined;
  readonly content: unknown;
  readonly mode: RepairMode;
}

type Reply =
  | { readonly type: "ready"; readonly cpu: number }
  | {
      readonly type: "done";
      readonly cpu: number;
      readonly outcome?: Omit<JsonOutcome, "content"> & { content?: unknown };
      readonly error?: { readonly name: string; readonly message: string; readonly tooSlow: boolean };
    };

/** This thread's CPU time in µs, as the kernel counts it (what `worker.cpuUsage()` reads from outside). */
function threadCpuMicros(): number {
  const usage = process.threadCpuUsage();
  return usage.user + usage.system;
}

/** The outcome of one job, computed on the thread: what json.ts's hooks would compute in place. */
function outcomeOf(job: Job, parsed: Map<string, unknown>, registeredSets: Map<string, RegisteredSchemas>) {
  let schema = parsed.get(job.schemaText);
  if (schema === undefined) {
    if (parsed.size >= MAX_PARSED) parsed.clear();
    // The same object for the same text: compile.ts's cache finds it by identity.
    schema = JSON.parse(job.schemaText) as unknown;
    parsed.set(job.schemaText, schema);
  }
  let registered: RegisteredSchemas | undefined;
  if (job.registeredText !== undefined) {
    registered = registeredSets.get(job.registeredText);
    if (!registered) {
      registered = new RegisteredSchemas(JSON.parse(job.registeredText) as unknown[]);
      registeredSets.set(job.registeredText, registered);
    }
  }
  const lookup = compileJsonSchema(schema, registered);
  if (!lookup.ok) throw new InvalidSchemaError(`context.schema: ${lookup.problem.message}`);
  const compiled = lookup.schema;
  const { content, repairs } = compiled.repair(job.content, { mode: job.mode });
  const findings = ruleFindings(compiled, content, job.mode);
  const units = findings.some((f) => f.severity !== "info") ? compiled.units(content) : undefined;
  return {
    repairs,
    findings,
    ...(repairs.length > 0 && { content, before: ruleFindings(compiled, job.content, job.mode) }),
    ...(units !== undefined && { units }),
  };
}

/** The thread's side: answers each job on the port, with its CPU time after it. */
function serveThread(port: MessagePort): void {
  const parsed = new Map<string, unknown>();
  const registeredSets = new Map<string, RegisteredSchemas>();
  port.on("message", (job: Job) => {
    void (async () => {
      let reply: Reply;
      try {
        // Inside a deferral of its own, so that patterns RE2 cannot read go to this thread's pattern
        // pool, as on the validating thread: each within its budget and the draft within its budget
        // for all of them (DRAFT_PATTERN_BUDGET_MS). In place, a schema of 300 slow-but-legal patterns
        // ran 12 s while this thread, waiting on them, spent none of its own CPU budget.
        const outcome = await withDeferral(() => outcomeOf(job, parsed, registeredSets));
        reply = { type: "done", outcome, cpu: threadCpuMicros() };
      } catch (error) {
        const e = error instanceof Error ? error : new Error(String(error));
        reply = {
          type: "done",
          error: { name: e.name, message: e.message, tooSlow: error instanceof SchemaTooSlowError },
          cpu: threadCpuMicros(),
        };
      }
      port.postMessage(reply);
    })();
  });
  port.postMessage({ type: "ready", cpu: threadCpuMicros() } satisfies Reply);
}

/** One thread of the pool, with the CPU time it had spent when it last went idle. */
interface JsonThread {
  readonly worker: Worker;
  idleCpu: number;
}

let checks = 0;

/** How many drafts' checks were sent to a thread so far (tests, the bench). */
export function jsonThreadChecks(): number {
  return checks;
}

/** The next message of `worker`, or undefined when it exits or fails first. */
function nextReply(worker: Worker): Promise<Reply | undefined> {
  return new Promise((resolve) => {
    const done = (reply: Reply | undefined) => {
      worker.off("message", onMessage);
      worker.off("exit", onEnd);
      worker.off("error", onEnd);
      resolve(reply);
    };
    const onMessage = (reply: Reply) => done(reply);
    const onEnd = () => done(undefined);
    worker.on("message", onMessage);
    worker.on("exit", onEnd);
    worker.on("error", onEnd);
  });
}

async function startThread(): Promise<JsonThread> {
  const url = new URL(import.meta.url);
  // From the sources (vitest, tsx), the thread needs tsx to load TypeScript; dist/ and a bundle are JavaScript.
  const typescript = url.pathname.endsWith(".ts");
  const hasTsx = process.execArgv.some((arg) => arg.includes("tsx"));
  // By its path: `--import tsx` would be resolved from the working directory, which a caller may have changed.
  const tsx = typescript && !hasTsx ? pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href : "";
  const worker = new Worker(url, {
    workerData: { [THREAD_FLAG]: true },
    execArgv: tsx ? [...process.execArgv, "--import", tsx] : process.execArgv,
    stdout: false,
    stderr: false,
    // The stack of the validating thread (~1 MB), so that what overflows it overflows here too.
    resourceLimits: { stackSizeMb: 1 },
  });
  // A thread that fails says so by exiting (nextReply); unheard, its error would be the process's.
  worker.on("error", () => {});
  worker.unref();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), THREAD_START_MS);
  });
  const reply = await Promise.race([nextReply(worker), timeout]);
  clearTimeout(timer);
  if (reply?.type !== "ready") {
    void worker.terminate();
    throw new Error(`the json check's thread did not start within ${THREAD_START_MS} ms`);
  }
  return { worker, idleCpu: reply.cpu };
}

const idle: JsonThread[] = [];
let busy = 0;
/** Checks waiting for a thread, in the order they came (one question per draft's check). */
const waiting: (() => void)[] = [];

async function takeThread(): Promise<JsonThread> {
  if (busy >= MAX_THREADS) await new Promise<void>((resolve) => waiting.push(resolve));
  busy += 1;
  try {
    return idle.pop() ?? (await startThread());
  } catch (error) {
    releasePlace();
    throw error;
  }
}

function releasePlace(): void {
  busy -= 1;
  waiting.shift()?.();
}

function tooSlow(budgetMs: number, what: string): SchemaTooSlowError {
  return new SchemaTooSlowError(
    "",
    0,
    budgetMs,
    `${TOO_SLOW}: checking this draft against its schema took more than ${budgetMs} ms of ${what} and was stopped (a schema slow on every value: formats or patterns over long strings, uniqueItems or const over large data, huge enums); make the schema cheaper to check, or the data smaller`,
  );
}

/** The error a thread's check ended with, as the same class it would be in place where it matters. */
function errorOf(error: { name: string; message: string; tooSlow: boolean }): Error {
  if (error.tooSlow) return new SchemaTooSlowError("", 0, 0, error.message);
  if (error.name === "InvalidSchemaError") return new InvalidSchemaError(error.message);
  return new Error(error.message);
}

/** Runs `job` on a thread of the pool within `budgetMs` of its CPU time. */
async function onThread(
  job: Job,
  budgetMs: number,
): Promise<NonNullable<Extract<Reply, { type: "done" }>["outcome"]>> {
  const thread = await takeThread();
  const { worker } = thread;
  let watch: NodeJS.Timeout | undefined;
  let keep = true;
  try {
    worker.ref();
    const replied = nextReply(worker);
    worker.postMessage(job);
    checks += 1;
    const start = performance.now();
    // The thread's CPU time since its last job, as the kernel counts it; a Node 22 older than 22.19 has
    // no worker.cpuUsage(): wall-clock time then (an upper bound of it).
    const spent =
      typeof worker.cpuUsage === "function"
        ? () => worker.cpuUsage().then((usage) => (usage.user + usage.system - thread.idleCpu) / 1000)
        : () => Promise.resolve(performance.now() - start);
    const stopped = new Promise<Error>((resolve) => {
      watch = setInterval(() => {
        void spent().then(
          (spentMs) => {
            if (spentMs > budgetMs) resolve(tooSlow(budgetMs, "CPU time"));
            else if (performance.now() - start > budgetMs * WALL_FACTOR)
              resolve(tooSlow(budgetMs * WALL_FACTOR, "wall-clock time (waiting on its patterns)"));
          },
          // The thread ended meanwhile: its reply (or its absence) says what happened.
          () => {},
        );
      }, WATCH_EVERY_MS);
    });
    const reply = await Promise.race([replied, stopped]);
    if (reply instanceof Error) {
      keep = false;
      throw reply;
    }
    if (reply?.type !== "done") {
      keep = false;
      throw new Error("the json check's thread ended without an answer");
    }
    thread.idleCpu = reply.cpu;
    if (reply.error) throw errorOf(reply.error);
    if (!reply.outcome) throw new Error("the json check's thread answered nothing");
    return reply.outcome;
  } finally {
    clearInterval(watch);
    if (keep) {
      worker.unref();
      idle.push(thread);
    } else void worker.terminate();
    releasePlace();
  }
}

// ---- the host's side: one question per draft's check --------------------------------------------

/** The question each draft asks, by draft object (the same in every round of its check); null: checked in place. */
const questionKeys = new WeakMap<object, string | null>();
let questions = 0;

/** What the json pack's settings say that the thread needs. */
interface ThreadSettings {
  readonly repair: RepairMode;
  readonly schemas?: readonly unknown[] | undefined;
  readonly cpuBudgetMs?: number | undefined;
  readonly thread?: "auto" | "always" | undefined;
}

/**
 * The outcomes of repaired checks, by the content the thread repaired (answered for the repaired draft
 * too), or IN_PLACE for the content a draft checked in place was repaired to (repair only removes, so
 * its repaired draft is no costlier: not weighed again).
 */
const IN_PLACE = Symbol("in place");
const repairedBy = new WeakMap<object, JsonOutcome | typeof IN_PLACE>();

/** Notes that `repaired` is the in-place repair of `draft`'s content: its repaired draft stays in place too. */
export function repairedInPlace(draft: Draft, repaired: unknown): void {
  if (questionKeys.get(draft) === null && typeof repaired === "object" && repaired !== null)
    repairedBy.set(repaired, IN_PLACE);
}

/** Registered schemas' text, by the settings' array (serialized once per configuration). */
const registeredTexts = new WeakMap<readonly unknown[], string>();

/**
 * The product of the schema's and the content's weights (about their JSON sizes in bytes) up to which a
 * check whose schema is not recursive stays in place. Without recursion (and with an unfolded size under
 * data-cost.ts's GUARDED_UNFOLDED) Ajv's work is about the schema applied once to each value, so this
 * product bounds it: the SchemaStore slice's drafts and the bench's (12 KB schema, 6 KB records) are far
 * under it; a 74 KB enum over 300 KB of items (4 s in place) is far over.
 */
const IN_PLACE_WORK = 2 ** 27;
/** A value's weight counted up to here at most (the walk stops). */
const MAX_WEIGHT = 2 ** 27;
/**
 * Sub-schema evaluations (data-cost.ts's count) up to which a recursive schema's draft stays in place:
 * Ajv runs ten to forty million a second, so about ten milliseconds at most (an ordinary tree: thousands).
 */
const IN_PLACE_EVALUATIONS = 200_000;

/** About the value's JSON size: 8 per value, plus each string's and key's length; stops past `limit`. */
function weightOf(value: unknown, limit: number): number {
  let weight = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && weight <= limit) {
    const v = stack.pop();
    weight += 8;
    if (typeof v === "string") weight += v.length;
    else if (Array.isArray(v)) for (const item of v) stack.push(item);
    else if (typeof v === "object" && v !== null) {
      const record = v as Record<string, unknown>;
      for (const key in record) {
        if (!Object.hasOwn(record, key)) continue;
        weight += key.length;
        stack.push(record[key]);
      }
    }
  }
  return weight;
}

/** Values walked at most by clonesAsItself: far past what a draft within its size limit holds (a cycle stops there). */
const MAX_CLONED_VALUES = 20_000_000;

/**
 * Whether the structured clone the thread receives is the same JSON data: only JSON values, objects with
 * Object.prototype or null as prototype, arrays with Array.prototype (what JSON.parse makes). Anything
 * else (a getter's object, a class instance) is checked in place, where Ajv sees it as it is.
 */
function clonesAsItself(value: unknown): boolean {
  const stack: unknown[] = [value];
  for (let seen = 0; stack.length > 0; seen++) {
    if (seen > MAX_CLONED_VALUES) return false;
    const v = stack.pop();
    if (v === null || typeof v === "string" || typeof v === "boolean") continue;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return false;
      continue;
    }
    if (typeof v !== "object") return false;
    const proto = Object.getPrototypeOf(v);
    if (Array.isArray(v)) {
      if (proto !== Array.prototype) return false;
      for (let i = 0; i < v.length; i++) stack.push(v[i]);
    } else {
      if (proto !== Object.prototype && proto !== null) return false;
      const record = v as Record<string, unknown>;
      for (const key of Object.keys(record)) stack.push(record[key]);
    }
  }
  return true;
}

/** Schema weights by compiled schema (the same for every draft carrying an equal schema: compile.ts's cache). */
const schemaWeights = new WeakMap<CompiledJsonSchema, number>();

/**
 * Whether the draft's check may take more than an ordinary draft's: its schema is recursive (or large
 * unfolded: data-cost.ts counts its drafts) and this content costs more than IN_PLACE_EVALUATIONS
 * evaluations, or the schema and the content are large together (each evaluation may compare, match or
 * walk the schema's values: an enum, a const, a format). Only these leave the validating thread, so an
 * ordinary draft pays no round trip.
 */
function riskyDraft(compiled: CompiledJsonSchema | undefined, content: unknown): boolean {
  if (!compiled) return false;
  if (isDraftCostGuarded(compiled) && draftEvaluations(compiled, content, IN_PLACE_EVALUATIONS) === undefined)
    return true;
  let schemaWeight = schemaWeights.get(compiled);
  if (schemaWeight === undefined) {
    schemaWeight = weightOf(compiled.schema, MAX_WEIGHT);
    schemaWeights.set(compiled, schemaWeight);
  }
  return schemaWeight * weightOf(content, Math.ceil(IN_PLACE_WORK / schemaWeight)) > IN_PLACE_WORK;
}

/**
 * The draft's outcome computed on a thread, when the check runs inside a deferral and may be costly
 * (`riskyDraft`, or the pack's `thread` setting is `always`); undefined otherwise (no deferral, no schema, an
 * ordinary draft, content that is not plain JSON data): the hooks then check in place. `compiled` is the
 * draft's schema compiled in place (cached: the validate step compiles it there first, to refuse an
 * unusable one before the run starts). In the first round of the deferral the answer is provisional
 * (nothing repaired, nothing found), and that round's result is thrown away.
 */
export function threadOutcome(
  draft: Draft,
  settings: ThreadSettings,
  compiled: () => CompiledJsonSchema | undefined,
): JsonOutcome | undefined {
  const deferral = activeDeferral();
  if (!deferral) return undefined;
  // The repaired draft the engine checks next (a new object each round, around the repaired content).
  const content = draft.content;
  if (typeof content === "object" && content !== null) {
    const known = repairedBy.get(content);
    if (known) return known === IN_PLACE ? undefined : known;
  }
  const schema = draft.context?.schema;
  if (schema === undefined || schema === null) return undefined;
  let key = questionKeys.get(draft);
  if (key === undefined) {
    // Decided once per draft object (its hooks ask again in every round, and once per content they see).
    key = null;
    if (settings.thread === "always" || riskyDraft(compiled(), draft.content))
      if (clonesAsItself(schema) && clonesAsItself(draft.content)) {
        questions += 1;
        key = `json-thread\u0000${questions}`;
      }
    questionKeys.set(draft, key);
  }
  if (key === null) return undefined;
  const provisional: JsonOutcome = { content: draft.content, repairs: [], findings: [] };
  return deferral.answer(key, () => ask(draft, schema, settings), provisional);
}

async function ask(draft: Draft, schema: unknown, settings: ThreadSettings): Promise<JsonOutcome> {
  let registeredText: string | undefined;
  const { schemas } = settings;
  if (schemas && schemas.length > 0) {
    registeredText = registeredTexts.get(schemas);
    if (registeredText === undefined) {
      registeredText = JSON.stringify(schemas);
      registeredTexts.set(schemas, registeredText);
    }
  }
  const job: Job = {
    schemaText: JSON.stringify(schema),
    registeredText,
    content: draft.content,
    mode: settings.repair,
  };
  const outcome = await onThread(job, settings.cpuBudgetMs ?? DEFAULT_JSON_CPU_BUDGET_MS);
  // Nothing repaired: the draft's own content, as in place (the engine keeps the draft as it is).
  if (outcome.repairs.length === 0) return { ...outcome, content: draft.content };
  if (typeof outcome.content === "object" && outcome.content !== null)
    repairedBy.set(outcome.content, outcome as JsonOutcome);
  return outcome as JsonOutcome;
}

if (!isMainThread && parentPort && (workerData as Record<string, unknown> | null)?.[THREAD_FLAG] === true) {
  serveThread(parentPort);
}
