/**
 * eachBounded (cli/run.ts), the pool of `redraft run --concurrency`: an item that parks (shared/slot.ts:
 * its json pattern test waits on the pattern pool's slow lane) gives its place to the next item, up to
 * 64 parked at once; an item that does not park keeps it. Orders and counts only, no timing.
 */
import { describe, expect, it } from "vitest";
import { eachBounded } from "../../cli/run.js";
import { parkingSlot } from "../../shared/slot.js";

async function* numbers(n: number): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) yield i;
}

/** A promise and what opens it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Lets every pending callback and promise run (a few turns of the event loop). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("eachBounded", () => {
  it("an item that waits without parking keeps its place: the others wait for it", async () => {
    const wait = gate();
    const started: number[] = [];
    const run = eachBounded(numbers(6), 2, async (i) => {
      started.push(i);
      if (i < 2) await wait.opened;
    });
    await settle();
    expect(started).toEqual([0, 1]);
    wait.open();
    await run;
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("an item that parks gives its place to the next: the items after it end while it waits", async () => {
    const wait = gate();
    const ended: number[] = [];
    let inFlight = 0;
    let mostUnparked = 0;
    const run = eachBounded(numbers(8), 2, async (i) => {
      inFlight += 1;
      if (i < 2) {
        parkingSlot()();
        // A second call gives back nothing more.
        parkingSlot()();
        inFlight -= 1;
        await wait.opened;
      } else {
        mostUnparked = Math.max(mostUnparked, inFlight);
        await settle();
        inFlight -= 1;
      }
      ended.push(i);
    });
    await settle();
    while (ended.length < 6) await settle();
    expect(ended.slice().sort()).toEqual([2, 3, 4, 5, 6, 7]);
    // The items that did not park were never more than the concurrency at once.
    expect(mostUnparked).toBeLessThanOrEqual(2);
    wait.open();
    await run;
    expect(ended.slice(6).sort()).toEqual([0, 1]);
  });

  it("at most 64 items are parked at once: past that, a parked item keeps its place", async () => {
    const wait = gate();
    const started: number[] = [];
    const run = eachBounded(numbers(100), 2, async (i) => {
      started.push(i);
      parkingSlot()();
      await wait.opened;
    });
    await settle();
    expect(started).toHaveLength(2 + 64);
    wait.open();
    await run;
    expect(started).toHaveLength(100);
  });

  it("a failing item ends the run with its error once the items in flight, parked ones included, end", async () => {
    const wait = gate();
    const ended: number[] = [];
    const run = eachBounded(numbers(10), 2, async (i) => {
      if (i === 0) {
        parkingSlot()();
        await wait.opened;
      }
      if (i === 3) throw new Error("item 3 failed");
      ended.push(i);
    });
    const outcome = run.then(
      () => "resolved",
      (error: Error) => error.message,
    );
    await settle();
    // The parked item is still waiting: the run does not end before it.
    let done = false;
    void outcome.then(() => {
      done = true;
    });
    await settle();
    expect(done).toBe(false);
    wait.open();
    expect(await outcome).toBe("item 3 failed");
    expect(ended).toContain(0);
    // No item is taken after the failure.
    expect(Math.max(...ended)).toBeLessThan(6);
  });

  it("outside eachBounded, parking gives back nothing and throws nothing", () => {
    expect(() => parkingSlot()()).not.toThrow();
  });
});
