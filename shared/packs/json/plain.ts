/**
 * When Ajv's `ownProperties` option changes nothing, so that a validator compiled without it gives the
 * same verdict and errors. With the option, Ajv's code asks `hasOwnProperty` after every property lookup
 * and lists `Object.keys` where it would use `for…in`, which costs about half of a pass; the two differ
 * only where a looked-up name or an enumerated key is inherited. For data whose every object has
 * Object.prototype (or null) as its prototype and every array Array.prototype, the only inherited
 * members are Object.prototype's own: so when none of them is a name the schema uses and none is
 * enumerable, both validators read exactly the same members.
 */
import { isRecord } from "./util.js";

/**
 * Every string of a schema, as a key or as a value: a superset of the property names Ajv's code can
 * look up in an instance (`properties`, `required`, `dependentRequired`, `dependencies`…).
 */
export function schemaStrings(schema: unknown): Set<string> {
  const names = new Set<string>();
  // The schema passed the guard's depth bound: an explicit stack all the same, as the guard does.
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === "string") names.add(value);
    else if (Array.isArray(value)) stack.push(...value);
    else if (isRecord(value)) {
      for (const key of Object.keys(value)) {
        names.add(key);
        stack.push(value[key]);
      }
    }
  }
  return names;
}

const NOTHING = Object.freeze({});

/**
 * Whether no name in `names` is a member of Object.prototype and Object.prototype has no enumerable
 * member. Asked at every check, not once: Object.prototype can change while the process runs.
 */
export function prototypeLeavesAlone(names: ReadonlySet<string>): boolean {
  for (const _ in NOTHING) return false;
  for (const name of Object.getOwnPropertyNames(Object.prototype)) if (names.has(name)) return false;
  return true;
}

/**
 * Objects walked at most when telling whether a value is plain data: past this (a huge or cyclic value)
 * the answer is no, which only means the slower validator runs.
 */
const MAX_PLAIN_OBJECTS = 100_000;

/**
 * Whether every object in `value` has Object.prototype or null as its prototype and every array
 * Array.prototype: what JSON.parse and object literals make. Walked with an explicit stack and a
 * budget, so a deep or cyclic value costs a bounded loop.
 */
export function isPlainData(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  const stack: object[] = [value];
  for (let budget = MAX_PLAIN_OBJECTS; stack.length > 0; budget--) {
    if (budget === 0) return false;
    const node = stack.pop() as object;
    const proto = Object.getPrototypeOf(node);
    if (Array.isArray(node)) {
      if (proto !== Array.prototype) return false;
      for (const item of node) if (typeof item === "object" && item !== null) stack.push(item);
    } else {
      if (proto !== Object.prototype && proto !== null) return false;
      const record = node as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const item = record[key];
        if (typeof item === "object" && item !== null) stack.push(item);
      }
    }
  }
  return true;
}
