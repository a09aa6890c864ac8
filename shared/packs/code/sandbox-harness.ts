import { readFileSync } from "node:fs";

/**
 * The guest side of the QuickJS sandbox: the script evaluated in every fresh context before the
 * draft's source. It gives the tests `assert` and `AssertionError`, and gives the host the helpers it
 * needs to read what a test left behind. It runs inside QuickJS, not in Node: it is a plain script,
 * sandbox-harness.guest.js beside this module (linted like the rest), that the host reads as text
 * and evaluates; this module loads it and holds what host and guest agree on.
 *
 * What makes a test's verdict unforgeable by the source (or by the test's neighbours) is split
 * between this script and the host (sandbox.ts):
 * - `assert` and `AssertionError` are global *lexical* bindings (`const`). Identifier lookup finds
 *   them before any property of the global object, so `Object.defineProperty(globalThis, "assert")`,
 *   `delete`, assignment or a source-level `var assert` cannot change what a test calls. (The
 *   global object itself is no place for them: in QuickJS 2025-09, `Object.defineProperty` on a
 *   global-object property replaces its value even when the property is non-writable and
 *   non-configurable, so a draft could swap `assert` for a no-op: tests/packs/code-adversarial.test.ts.)
 *   Both are frozen.
 * - Every failed assertion is reported to the host, through a host function this script captures
 *   and removes from the global object before any draft code runs, *before* the AssertionError is
 *   thrown. A source that catches the error, or makes the test complete anyway, does not undo the
 *   record. An assertion that cannot finish (its comparison throws, its predicate throws) is
 *   reported too.
 * - The assertions use only intrinsics captured here, called through the captured `Reflect.apply`;
 *   they never look a method up on a prototype at call time (no for-of, no `.call`, no string
 *   coercion of guest values outside a try), and their scratch objects have no prototype.
 * - `assert.rejects` observes a promise only if the host confirms it is a genuine Promise, and
 *   waits for it with `await` after pinning the promise's own `constructor`, so that QuickJS takes
 *   its internal path and never calls a guest `then`. The host counts the rejects still waiting.
 * - The realm is locked (MODE.lock) before the source runs, as SES's `lockdown()` does: every
 *   object reachable from the global built-ins (constructors, prototypes, namespaces, their methods,
 *   getters and setters, and the intrinsics only an instance reaches, such as the iterator
 *   prototypes) is frozen, and the built-ins' global bindings are made read-only. Because QuickJS
 *   lets `Object.defineProperty` replace a non-writable global, the test's code also runs in a block
 *   (`prelude`) that binds every built-in's global name to the value captured here, through the
 *   lexical `__redraftBuiltins`. A few prototype properties a draft's own objects commonly assign
 *   over (Object.prototype's, Function.prototype's constructor and toString, the errors' name,
 *   message, constructor and toString) become accessors that define an own property on the
 *   assigning object and throw, naming the built-in, when assigned on the built-in itself (SES's
 *   override taming).
 * - In watch mode (MODE.watch, the host's probe, once per suite) the realm stays open and is
 *   snapshotted; `changes()` lists what the source's top-level code replaced, added or deleted.
 * - Each assertion tells the host whether the test's own code called it (the first frame outside
 *   the harness and native code is in `tests/<i>.js`): a test that ran none proves nothing, and
 *   `assert.expect(n)` declares the count.
 * - The protocols that the *test's own syntax* relies on (await and `.then`: Promise.prototype.then,
 *   Promise.prototype.constructor and Promise[Symbol.species]; destructuring, spread and for-of over
 *   arrays: Array.prototype[Symbol.iterator] and the array iterator's `next`) are made read-only, so
 *   that a source cannot rewrite every array or promise a test looks at.
 *
 * The script's completion value is the host's toolbox: `describe` (a thrown value as JSON text,
 * read with the host's read budget), `thenable` (whether a value has a `then`), `prelude` and, in
 * watch mode, `changes`.
 */

/**
 * The global property through which the host hands its functions in, and takes the toolbox out.
 * The guest file names it literally (`__redraftHost`): it is how anything reaches the guest at all.
 */
export const HOST_SLOT = "__redraftHost";

/** Operations of the host's `record` function. */
export const RECORD = { failed: 1, waiting: 2, settled: 3, counted: 4, expected: 5 } as const;

/**
 * What a session's harness does with the realm: `lock` freezes it before a test's source runs;
 * `watch` leaves it open and snapshots it, for the probe that names what a source changes.
 */
export const MODE = { lock: 1, watch: 2, tests: 3 } as const;
export type HarnessMode = (typeof MODE)[keyof typeof MODE];

/**
 * A sort without a comparator is one native call QuickJS cannot interrupt. Above these lengths the
 * harness sorts through a comparator with the same order, whose calls count against the budget: an
 * array's default order compares strings (slow natively: ~0.3 s for 65,536 numbers on the CI VM), a
 * typed array's compares numbers (fast). An array-like longer than `genericLengthMax` is refused.
 */
const SORT_CAPS = {
  nativeSortMax: 2 ** 16,
  nativeTypedSortMax: 2 ** 20,
  genericLengthMax: 2 ** 24,
} as const;

/** Caps on the text brought back from the sandbox per thrown value or failed assertion. */
export const MAX_MESSAGE_CHARS = 2000;
export const MAX_STACK_CHARS = 4000;

export const HARNESS_FILE = "redraft-assert.js";

/** The guest script, beside this module (and beside each Lambda bundle, which gets a copy). */
const GUEST_FILE = "sandbox-harness.guest.js";

let source: string | undefined;

/**
 * The harness's text, read once, at the first sandbox session (not at import: a step that never
 * runs the code pack never reads it). The file sits beside the module that reads it in each form
 * redraft runs in: the sources (tsx, vitest), dist/ (scripts/build.ts copies it), and a Lambda
 * bundle (`redraftFunction` copies it next to index.mjs, as it does the QuickJS WebAssembly).
 */
export function harnessSource(): string {
  source ??= readFileSync(new URL(GUEST_FILE, import.meta.url), "utf8");
  return source;
}

/**
 * What the host hands the harness on `HOST_SLOT` besides its two functions: the codes of `record`
 * and the caps on text, so that the guest file holds no copy of them.
 */
export const HARNESS_CONSTANTS = {
  failed: RECORD.failed,
  waiting: RECORD.waiting,
  settled: RECORD.settled,
  counted: RECORD.counted,
  expected: RECORD.expected,
  lock: MODE.lock,
  tests: MODE.tests,
  ...SORT_CAPS,
  maxMessageChars: MAX_MESSAGE_CHARS,
  maxStackChars: MAX_STACK_CHARS,
} as const;
