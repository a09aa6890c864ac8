/**
 * A place among a caller's drafts in flight (`redraft run --concurrency`: so many drafts at once) that a
 * draft gives up while it waits for slow work that is not the thread's: a json draft whose pattern test
 * waits for, or runs in, the pattern pool's slow lane (packs/json/regex-guard.ts). The caller then
 * starts its next draft, so hostile drafts parked in that lane do not keep the benign ones from
 * starting (issue 34). Carried by AsyncLocalStorage, so the steps between the caller and the pool (the
 * runtime, the state machine, the deferral) need not pass it along.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const places = new AsyncLocalStorage<() => void>();

/** `work()` run holding a place that `release` gives back (the caller makes a second call a no-op). */
export function holdingPlace<T>(release: () => void, work: () => Promise<T>): Promise<T> {
  return places.run(release, work);
}

const holdsNone = (): void => {};

/** What gives back the place the running work holds: nothing outside holdingPlace. */
export function parkingSlot(): () => void {
  return places.getStore() ?? holdsNone;
}
