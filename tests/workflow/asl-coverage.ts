/**
 * Path coverage of the synthesized state machine, measured from execution histories.
 *
 * What can be covered is enumerated from the ASL itself (every `Next`, every Choice rule and
 * `Default`, every `Catch` and every `Retry` entry), never from a list kept beside it, so a state
 * the infrastructure adds is uncovered until a scenario takes it. What was covered is read from the
 * histories the local runtime keeps: a Choice's branch is decided by running the Choice state
 * itself in aws-local-stepfunctions on the input it was entered with, and a Retry or Catch is the
 * first entry whose `ErrorEquals` matches the error, as the engine picks it.
 */
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import type { AslDefinition, AslState } from "../../contracts/asl.js";
import type { HistoryEvent } from "../../local/runtime.js";

type TransitionKind = "next" | "choice" | "default" | "catch" | "retry";

/** One way out of a state (or, for a retry, back into it). */
export interface Transition {
  /** Stable and readable: `Revalidate -> ClassifyFailure? [catch 0: States.ALL]`. */
  id: string;
  from: string;
  /** The state it leads to; a retry runs `from` again. */
  to: string;
  kind: TransitionKind;
  /** The position of the Choice rule, Catch or Retry entry in its list. */
  index?: number;
  /** A retrier with `MaxAttempts: 0` never retries: it is exercised when an error matches it and is not retried. */
  declines?: boolean;
}

interface Rule {
  [field: string]: unknown;
  Next: string;
  ErrorEquals?: string[];
  MaxAttempts?: number;
}

const list = (value: unknown): Rule[] => (Array.isArray(value) ? (value as Rule[]) : []);

/** Every transition of the state machine, in the order of its states. */
export function transitionsOf(asl: AslDefinition): Transition[] {
  const out: Transition[] = [];
  for (const [from, state] of Object.entries(asl.States)) {
    const add = (t: Omit<Transition, "id" | "from">, label: string) =>
      out.push({ id: `${from} ${t.kind === "retry" ? "retry" : `-> ${t.to}`} [${label}]`, from, ...t });
    if (typeof state.Next === "string") add({ to: state.Next, kind: "next" }, "next");
    list(state.Choices).forEach((rule, index) => {
      add({ to: rule.Next, kind: "choice", index }, `choice ${index}: ${describeRule(rule)}`);
    });
    if (typeof state.Default === "string") add({ to: state.Default, kind: "default" }, "default");
    list(state.Catch).forEach((catcher, index) => {
      add({ to: catcher.Next, kind: "catch", index }, `catch ${index}: ${catcher.ErrorEquals?.join(", ")}`);
    });
    list(state.Retry).forEach((retrier, index) => {
      const declines = retrier.MaxAttempts === 0;
      add(
        { to: from, kind: "retry", index, ...(declines && { declines }) },
        `retry ${index}: ${retrier.ErrorEquals?.join(", ")}${declines ? " (MaxAttempts 0)" : ""}`,
      );
    });
  }
  return out;
}

/** A Choice rule in one line: `$.verdict.errors == 0`, `$.a == true and $.b == true`. */
function describeRule(rule: Record<string, unknown>): string {
  for (const op of ["And", "Or"] as const) {
    const parts = rule[op];
    if (Array.isArray(parts)) return parts.map((p) => describeRule(p)).join(` ${op.toLowerCase()} `);
  }
  if (rule.Not) return `not (${describeRule(rule.Not as Record<string, unknown>)})`;
  const op = Object.keys(rule).find((k) => k !== "Variable" && k !== "Next");
  return op ? `${String(rule.Variable)} ${op} ${JSON.stringify(rule[op])}` : String(rule.Variable);
}

/** How ASL matches an error name against `ErrorEquals` (and how aws-local-stepfunctions does). */
function matches(errorEquals: readonly string[] | undefined, error: string, state: AslState): boolean {
  return (errorEquals ?? []).some(
    (e) =>
      e === error ||
      e === "States.ALL" ||
      (e === "States.TaskFailed" && state.Type === "Task" && error !== "States.Timeout"),
  );
}

const firstMatch = (rules: Rule[], error: string, state: AslState) =>
  rules.findIndex((r) => matches(r.ErrorEquals, error, state));

/**
 * Decides which rule of a Choice state an input takes by running that Choice state alone in
 * aws-local-stepfunctions, every rule leading to a Pass state that returns the rule's index.
 */
class ChoiceOracle {
  readonly #machines = new Map<string, StateMachine>();
  constructor(readonly asl: AslDefinition) {}

  async ruleTaken(name: string, input: unknown): Promise<number | "default"> {
    let machine = this.#machines.get(name);
    if (!machine) {
      const state = this.asl.States[name] as AslState;
      const rules = list(state.Choices);
      const end = (rule: number) => ({ Type: "Pass", Result: { rule }, End: true });
      const definition = {
        StartAt: name,
        States: {
          [name]: {
            ...state,
            Choices: rules.map((rule, i) => ({ ...rule, Next: `rule ${i}` })),
            ...(state.Default !== undefined && { Default: "default" }),
          },
          ...Object.fromEntries(rules.map((_, i) => [`rule ${i}`, end(i)])),
          default: end(-1),
        },
      };
      machine = new StateMachine(definition as unknown as StateMachineDefinition, {
        validationOptions: { checkArn: false },
      });
      this.#machines.set(name, machine);
    }
    const { rule } = (await machine.run(input as never).result) as { rule: number };
    return rule < 0 ? "default" : rule;
  }
}

/** The transitions one execution took (with repeats), read from its history. */
export async function transitionsTaken(
  asl: AslDefinition,
  history: readonly HistoryEvent[],
  oracle = new ChoiceOracle(asl),
): Promise<{ entered: string[]; taken: string[] }> {
  const all = transitionsOf(asl);
  const find = (from: string, kind: TransitionKind, index?: number) =>
    all.find((t) => t.from === from && t.kind === kind && t.index === index);
  const entered: string[] = [];
  const taken: string[] = [];
  const take = (t: Transition | undefined, what: string) => {
    if (!t) throw new Error(`the history shows ${what}, which the ASL does not have`);
    taken.push(t.id);
  };
  /** A failure not retried: a retrier with MaxAttempts 0 that matched it did its job. */
  const declined = (name: string, error: string) => {
    const state = asl.States[name] as AslState;
    const t = find(name, "retry", firstMatch(list(state.Retry), error, state));
    if (t?.declines) taken.push(t.id);
  };
  let current: HistoryEvent | undefined;
  let lastError: string | undefined;
  let caught: Transition | undefined;
  for (const event of history) {
    const name = event.state;
    const state = name === undefined ? undefined : asl.States[name];
    if (!name || !state) continue;
    if (event.type === "StateEntered") {
      if (current?.state) {
        const from = current.state;
        const fromState = asl.States[from] as AslState;
        if (caught) {
          if (caught.to !== name) throw new Error(`${caught.id} led to ${name}`);
          taken.push(caught.id);
        } else if (fromState.Type === "Choice") {
          const rule = await oracle.ruleTaken(from, current.input);
          const t = rule === "default" ? find(from, "default") : find(from, "choice", rule);
          if (t?.to !== name) throw new Error(`${from} took ${t?.id ?? "no rule"} but ${name} was entered`);
          take(t, `${from} -> ${name}`);
        } else {
          const t = find(from, "next");
          if (t && t.to !== name) throw new Error(`${t.id} but ${name} was entered`);
          take(t, `${from} -> ${name} by Next`);
        }
      }
      entered.push(name);
      current = event;
      caught = undefined;
      lastError = undefined;
    } else if (event.type === "StateFailed") {
      // A failure is then retried (StateRetried), caught (StateCaught), or ends the execution.
      if (lastError !== undefined) declined(name, lastError);
      lastError = event.error ?? "";
    } else if (event.type === "StateRetried") {
      const index = firstMatch(list(state.Retry), lastError ?? "", state);
      take(find(name, "retry", index), `a retry of ${name} on ${lastError}`);
      lastError = undefined;
    } else if (event.type === "StateCaught") {
      if (lastError !== undefined) declined(name, lastError);
      caught = find(name, "catch", firstMatch(list(state.Catch), lastError ?? "", state));
      if (!caught) throw new Error(`the history shows ${name} catching ${lastError}, which no Catch matches`);
      lastError = undefined;
    }
  }
  if (current?.state && lastError !== undefined) declined(current.state, lastError);
  return { entered, taken };
}

export interface CoverageReport {
  states: { name: string; entered: number }[];
  transitions: (Transition & { taken: number })[];
  missingStates: string[];
  missingTransitions: string[];
  /** `states N/N, transitions M/M` */
  summary: string;
  complete: boolean;
}

/** Coverage of the ASL by a set of execution histories. */
export async function coverageOf(
  asl: AslDefinition,
  histories: readonly (readonly HistoryEvent[])[],
): Promise<CoverageReport> {
  const oracle = new ChoiceOracle(asl);
  const enteredCount = new Map<string, number>();
  const takenCount = new Map<string, number>();
  for (const history of histories) {
    const { entered, taken } = await transitionsTaken(asl, history, oracle);
    for (const s of entered) enteredCount.set(s, (enteredCount.get(s) ?? 0) + 1);
    for (const t of taken) takenCount.set(t, (takenCount.get(t) ?? 0) + 1);
  }
  const states = Object.keys(asl.States).map((name) => ({ name, entered: enteredCount.get(name) ?? 0 }));
  const transitions = transitionsOf(asl).map((t) => ({ ...t, taken: takenCount.get(t.id) ?? 0 }));
  const missingStates = states.filter((s) => s.entered === 0).map((s) => s.name);
  const missingTransitions = transitions.filter((t) => t.taken === 0).map((t) => t.id);
  const coveredStates = states.length - missingStates.length;
  const coveredTransitions = transitions.length - missingTransitions.length;
  return {
    states,
    transitions,
    missingStates,
    missingTransitions,
    summary: `states ${coveredStates}/${states.length}, transitions ${coveredTransitions}/${transitions.length}`,
    complete: missingStates.length === 0 && missingTransitions.length === 0,
  };
}
