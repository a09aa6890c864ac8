/**
 * withDeferral (shared/deferred.ts): a synchronous check's questions answered off the thread, the check
 * run again with the answers; only the last round's result counts.
 */
import { describe, expect, it } from "vitest";
import { activeDeferral, withDeferral } from "../../shared/deferred.js";

/** A question asked of "elsewhere": answered after a timer, counted. */
function oracle(answers: Record<string, number>) {
  const asked: string[] = [];
  const ask = (key: string) => {
    const deferral = activeDeferral();
    if (!deferral) {
      asked.push(`in place ${key}`);
      return answers[key] ?? 0;
    }
    return deferral.answer(
      key,
      async () => {
        asked.push(key);
        await new Promise((resolve) => setTimeout(resolve, 1));
        return answers[key] ?? 0;
      },
      -1,
    );
  };
  return { ask, asked };
}

describe("withDeferral", () => {
  it("a check without questions runs once, and its error is its own", async () => {
    let rounds = 0;
    expect(await withDeferral(() => ++rounds)).toBe(1);
    await expect(
      withDeferral(() => {
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
  });

  it("answers every question of a round off the thread, then runs the check again with them", async () => {
    const { ask, asked } = oracle({ a: 2, b: 3 });
    let rounds = 0;
    const result = await withDeferral(() => {
      rounds++;
      return ask("a") + ask("b");
    });
    expect(result).toBe(5);
    expect(rounds).toBe(2);
    expect(asked).toEqual(["a", "b"]);
    expect(activeDeferral()).toBeUndefined();
  });

  it("follows a check whose answers lead it to new questions, and never counts a provisional round", async () => {
    const { ask, asked } = oracle({ first: 1, second: 7 });
    const result = await withDeferral(() => {
      // A provisional answer could throw in a branch the real one never takes: that round is thrown away.
      const first = ask("first");
      if (first < 0) throw new Error("provisional branch");
      return ask("second") * first;
    });
    expect(result).toBe(7);
    expect(asked).toEqual(["first", "second"]);
  });

  it("a question that cannot be answered ends the check with its error", async () => {
    await expect(
      withDeferral(() => {
        const deferral = activeDeferral();
        return deferral?.answer(
          "x",
          async () => {
            throw new Error("too slow");
          },
          0,
        );
      }),
    ).rejects.toThrow("too slow");
  });

  it("a check that keeps asking new questions ends by answering them in place", async () => {
    let n = 0;
    const asked: string[] = [];
    const result = await withDeferral(() => {
      n++;
      const deferral = activeDeferral();
      if (!deferral) {
        asked.push("in place");
        return "done";
      }
      // A new question every round.
      return deferral.answer(`q${n}`, async () => `answer ${n}`, "provisional");
    });
    expect(result).toBe("done");
    expect(asked).toEqual(["in place"]);
    expect(n).toBe(8);
  });

  it("checks of several drafts interleave: each keeps its own answers", async () => {
    const one = oracle({ k: 1 });
    const two = oracle({ k: 2 });
    const [a, b] = await Promise.all([withDeferral(() => one.ask("k")), withDeferral(() => two.ask("k"))]);
    expect([a, b]).toEqual([1, 2]);
  });
});
