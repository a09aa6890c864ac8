/**
 * Questions a synchronous check cannot answer on its own thread without holding it: a json schema's
 * pattern that only a worker may match (packs/json/regex-guard.ts), a code draft's suite run in the
 * sandbox's threads (packs/code/code.ts). Validation is synchronous (Ajv's
 * code calls the pattern's `test` and needs the answer at once), so outside a deferral such a question
 * is answered in place and the thread waits for it. Inside `withDeferral`, the question is noted and
 * given a provisional answer, the check runs to its end (its result is thrown away), the noted questions
 * are answered off the thread while the event loop serves other drafts, and the check runs again with
 * the answers known. The check must be pure: only its final round counts.
 */

/** The questions of one check's round and the answers of the rounds before. */
class Deferral {
  readonly #answers: Map<string, unknown>;
  readonly pending = new Map<string, () => Promise<unknown>>();
  /**
   * What the check has spent off the thread so far, over all its rounds: the same object for every
   * round of one check, so that a pool can tell the checks apart (to take turns between them) and hold
   * each to a budget of its own.
   */
  readonly ledger: DeferralLedger;

  constructor(answers: Map<string, unknown>, ledger: DeferralLedger) {
    this.#answers = answers;
    this.ledger = ledger;
  }

  /** The answer known for `key`, else `provisional` with the question noted. */
  answer<T>(key: string, ask: () => Promise<T>, provisional: T): T {
    if (this.#answers.has(key)) return this.#answers.get(key) as T;
    this.pending.set(key, ask);
    return provisional;
  }

  /**
   * Asks the noted questions one after the other. The first that fails ends the check with its error:
   * a question that cannot be answered (a pattern stopped past its budget) decides the draft, as it
   * would in place.
   */
  async settle(): Promise<void> {
    for (const [key, ask] of this.pending) this.#answers.set(key, await ask());
  }
}

/** One check's account of the work done for it off the thread (see Deferral.ledger). */
export interface DeferralLedger {
  /** Milliseconds of worker time its questions took. */
  workerMs: number;
}

let current: Deferral | undefined;

/** The deferral the running synchronous check is inside, if any: where a question may be noted. */
export function activeDeferral(): Deferral | undefined {
  return current;
}

/**
 * Rounds of a check after which the questions are answered in place: a check whose provisional answers
 * keep leading it to new questions (each answer opening another branch) still ends.
 */
const MAX_ROUNDS = 8;

/**
 * `check()`'s result, with every question it asks answered off the thread (see above). `check` runs
 * synchronously each round, so no other code runs while the deferral is active.
 */
export async function withDeferral<T>(check: () => T): Promise<T> {
  const answers = new Map<string, unknown>();
  const ledger: DeferralLedger = { workerMs: 0 };
  for (let round = 1; round < MAX_ROUNDS; round++) {
    const deferral = new Deferral(answers, ledger);
    current = deferral;
    let result: { value: T } | { error: unknown };
    try {
      result = { value: check() };
    } catch (error) {
      result = { error };
    } finally {
      current = undefined;
    }
    if (deferral.pending.size === 0) {
      if ("error" in result) throw result.error;
      return result.value;
    }
    await deferral.settle();
  }
  return check();
}
