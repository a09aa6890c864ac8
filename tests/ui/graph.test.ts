import { describe, expect, it } from "vitest";
import { StateNames } from "../../contracts/state-names.js";
import type { HistoryEvent } from "../../local/runtime.js";
import { executionPath, highlightedMermaid, mermaidNodeId } from "../../ui/graph.js";
import { buildTimeline } from "../../ui/timeline.js";
import { synthesizedAsl } from "../workflow/harness.js";

const entered = (...states: string[]): HistoryEvent[] =>
  states.flatMap((state) => [
    { type: "StateEntered", at: "2026-01-01T00:00:00.000Z", state },
    { type: "StateExited", at: "2026-01-01T00:00:00.000Z", state },
  ]);

/** A draft corrected twice: the execution loop goes round once more than it goes straight. */
const corrected = entered(
  StateNames.Validate,
  StateNames.HasErrors,
  StateNames.CorrectExecution,
  StateNames.CountExecutionAttempt,
  StateNames.Revalidate,
  StateNames.NextStep,
  StateNames.CorrectExecution,
  StateNames.CountExecutionAttempt,
  StateNames.Revalidate,
  StateNames.NextStep,
  StateNames.JudgeEnabled,
);

describe("the viewer's flowchart", () => {
  it("counts the entries of each state and the transitions in order, from start", async () => {
    const asl = await synthesizedAsl();
    const path = executionPath(corrected, asl.StartAt);
    expect(path.entered[StateNames.CorrectExecution]).toBe(2);
    expect(path.entered[StateNames.Validate]).toBe(1);
    expect(path.transitions[0]).toEqual(["start", asl.StartAt]);
    expect(path.transitions).toContainEqual([StateNames.NextStep, StateNames.CorrectExecution]);
  });

  it("highlights exactly the states entered, with their counts, and the links taken", async () => {
    const asl = await synthesizedAsl();
    const text = highlightedMermaid(asl, executionPath(corrected, asl.StartAt));
    const visited = /^ {2}class (\S+) visited$/m.exec(text)?.[1]?.split(",");
    expect(visited?.sort()).toEqual(
      [...new Set(corrected.map((e) => e.state ?? ""))].map(mermaidNodeId).sort(),
    );
    expect(text).toContain(
      `${mermaidNodeId(StateNames.CorrectExecution)}("${StateNames.CorrectExecution} ×2")`,
    );
    // linkStyle numbers the links in the order they are declared: each one named must be a transition taken.
    const links = text.split("\n").filter((line) => / (-->|-\.->)/.test(line));
    const styled = (/^ {2}linkStyle ([\d,]+) /m.exec(text)?.[1] ?? "").split(",").map(Number);
    const pairs = styled.map((i) => {
      const [, from = "", to = ""] = /^ {2}(\S+) (?:-->|-\.->)(?:\|.*\|)? (\S+)$/.exec(links[i] ?? "") ?? [];
      return `${from.replace(/\(.*$/, "")}>${to}`;
    });
    expect(pairs).toContain(
      `${mermaidNodeId(StateNames.NextStep)}>${mermaidNodeId(StateNames.CorrectExecution)}`,
    );
    const taken = executionPath(corrected, asl.StartAt).transitions.map(
      ([from, to]) => `${mermaidNodeId(from)}>${mermaidNodeId(to)}`,
    );
    for (const pair of pairs) expect(taken).toContain(pair);
    expect(pairs).toContain(
      `${mermaidNodeId(StateNames.NextStep)}>${mermaidNodeId(StateNames.JudgeEnabled)}`,
    );
    expect(pairs).toContain(`start>${mermaidNodeId(asl.StartAt)}`);
    expect(pairs).not.toContain(
      `${mermaidNodeId(StateNames.HasErrors)}>${mermaidNodeId(StateNames.InputRejected)}`,
    );
  });

  it("keeps every edge label short and draws no path for a run still in flight", async () => {
    const asl = await synthesizedAsl();
    const text = highlightedMermaid(asl, undefined);
    for (const [, label = ""] of text.matchAll(/\|"([^"]*)"\|/g))
      expect(label.length).toBeLessThanOrEqual(48);
    expect(text).not.toContain("visited");
    expect(text).not.toContain("linkStyle");
  });

  it("colours a state whose error was caught apart from one whose error ended the run", async () => {
    const asl = await synthesizedAsl();
    const at = "2026-01-01T00:00:00.000Z";
    const history: HistoryEvent[] = [
      { type: "ExecutionStarted", at },
      ...entered(StateNames.Validate, StateNames.HasErrors),
      { type: "StateEntered", at, state: StateNames.CorrectExecution },
      { type: "StateFailed", at, state: StateNames.CorrectExecution, error: "States.Timeout" },
      { type: "StateCaught", at, state: StateNames.CorrectExecution },
      { type: "StateEntered", at, state: StateNames.Revalidate },
      { type: "StateFailed", at, state: StateNames.Revalidate, error: "Boom" },
      { type: "ExecutionFailed", at, error: "Boom" },
    ];
    const text = highlightedMermaid(asl, executionPath(history, asl.StartAt), buildTimeline(history));
    const classOf = (name: string) =>
      new RegExp(`^ {2}class (\\S+) ${name}$`, "m").exec(text)?.[1]?.split(",");
    expect(classOf("caught")).toEqual([mermaidNodeId(StateNames.CorrectExecution)]);
    expect(classOf("failed")).toEqual([mermaidNodeId(StateNames.Revalidate)]);
    expect(classOf("visited")?.sort()).toEqual(
      [StateNames.Validate, StateNames.HasErrors].map(mermaidNodeId).sort(),
    );
    expect(text).toMatch(/classDef failed fill:#ffe3e3/);
  });

  it("draws the path alone: the states entered, the transitions taken, Choices as hexagons", async () => {
    const asl = await synthesizedAsl();
    const path = executionPath(corrected, asl.StartAt);
    const text = highlightedMermaid(asl, path, undefined, { scope: "path" });
    const declared = text
      .split("\n")
      .filter((line) => !/ (-->|-\.->)/.test(line))
      .flatMap((line) => /^ {2}([A-Za-z0-9_]+)[[({]/.exec(line)?.[1] ?? []);
    expect(declared.sort()).toEqual(Object.keys(path.entered).map(mermaidNodeId).sort());
    const edges = text.split("\n").filter((line) => / (-->|-\.->)/.test(line));
    const taken = new Set(
      path.transitions.map(([from, to]) => `${mermaidNodeId(from)}>${mermaidNodeId(to)}`),
    );
    expect(edges).toHaveLength(taken.size);
    for (const line of edges) {
      const [, from = "", to = ""] = /^ {2}(\S+) (?:-->|-\.->)(?:\|.*\|)? (\S+)$/.exec(line) ?? [];
      expect(taken).toContain(`${from.replace(/\(.*$/, "")}>${to}`);
    }
    expect(text).toContain(`${mermaidNodeId(StateNames.NextStep)}{{"${StateNames.NextStep} ×2"}}`);
    expect(text).not.toContain(mermaidNodeId(StateNames.InputRejected));
    // Every link drawn is a transition taken: all of them are styled as such.
    const styled = (/^ {2}linkStyle ([\d,]+) stroke:#2b8a3e/m.exec(text)?.[1] ?? "").split(",");
    expect(styled).toHaveLength(edges.length);
  });

  it("leaves out the Catch edges the run did not take unless asked, and draws them quietly then", async () => {
    const asl = await synthesizedAsl();
    const path = executionPath(corrected, asl.StartAt);
    const catchEdges = (text: string) => text.split("\n").filter((line) => / -\.->/.test(line));
    const without = highlightedMermaid(asl, path, undefined, { scope: "all", catches: false });
    const withCatches = highlightedMermaid(asl, path, undefined, { scope: "all", catches: true });
    expect(catchEdges(without)).toEqual([]);
    expect(catchEdges(withCatches).length).toBeGreaterThan(5);
    expect(withCatches).toMatch(/^ {2}linkStyle [\d,]+ stroke:#adb5bd,stroke-width:1px,stroke-dasharray/m);
    // Both keep every state of the machine.
    for (const name of Object.keys(asl.States)) {
      expect(without).toContain(`  ${mermaidNodeId(name)}`);
      expect(withCatches).toContain(`  ${mermaidNodeId(name)}`);
    }
  });

  it("draws a Catch edge as taken only when its state's error was caught", async () => {
    const asl = await synthesizedAsl();
    // MarkValidated goes on to AnnounceValidated both by its Next and by a Catch.
    const pair = Object.entries(asl.States).find(
      ([, state]) =>
        typeof state.Next === "string" &&
        Array.isArray(state.Catch) &&
        (state.Catch as { Next: string }[]).some((c) => c.Next === state.Next),
    );
    if (!pair) throw new Error("no state whose Next and Catch go to the same state");
    const [from, state] = pair;
    const to = String(state.Next);
    const at = "2026-01-01T00:00:00.000Z";
    const history = (caught: boolean): HistoryEvent[] => [
      { type: "ExecutionStarted", at },
      { type: "StateEntered", at, state: from },
      ...(caught
        ? ([
            { type: "StateFailed", at, state: from, error: "Boom" },
            { type: "StateCaught", at, state: from },
          ] as HistoryEvent[])
        : [{ type: "StateExited", at, state: from } as HistoryEvent]),
      { type: "StateEntered", at, state: to },
    ];
    const arrows = (caught: boolean) => {
      const events = history(caught);
      const text = highlightedMermaid(
        { ...asl, StartAt: from },
        executionPath(events, from),
        buildTimeline(events),
        { scope: "path" },
      );
      return text
        .split("\n")
        .filter((line) => line.startsWith(`  ${mermaidNodeId(from)} `))
        .map((line) => (line.includes("-.->") ? "catch" : "next"));
    };
    expect(arrows(false)).toEqual(["next"]);
    expect(arrows(true)).toEqual(["catch"]);
  });
});
