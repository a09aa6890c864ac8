import type { Violation } from "../draft.js";
import { fromPointer } from "../pointer.js";

/**
 * Field-level corrections: when every violation names a field of an object content, the model is
 * asked for the changed values only (a patch over those paths), every other field locked. Output
 * tokens then grow with the errors, not with the draft, and a rewrite cannot regress a field nobody
 * flagged: a patch that touches a locked field is refused as a regression.
 */

/** Kinds whose violations name fields a value can be written to. Others (code, text) answer whole. */
const PATCH_KINDS = new Set(["json", "mcq"]);

/** One change the model answers with: a value set at a path, or the path removed. */
export interface PatchOp {
  op: "set" | "remove";
  path: string;
  value?: unknown;
}

/** What the correction may touch, or `undefined` when the whole draft must be answered. */
export interface PatchScope {
  /** JSON Pointers the patch may write at or under; everything else is locked. */
  open: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The paths a correction of these violations may touch, or `undefined` when the structure itself is
 * wrong (a violation with no path or at the root, content that is not an object, a kind whose
 * violations do not name fields): then the whole draft is asked for.
 */
export function patchScope(
  kind: string,
  content: unknown,
  violations: readonly Violation[],
): PatchScope | undefined {
  if (!PATCH_KINDS.has(kind) || !isRecord(content) || violations.length === 0) return undefined;
  const open = new Set<string>();
  for (const v of violations) {
    if (!v.path || v.path === "/") return undefined;
    open.add(v.path);
    // What a fix must touch beside the flagged field: re-keyed or rewritten options move the answer key.
    if (kind === "mcq" && v.path.startsWith("/options")) open.add("/correct_answer");
    if (kind === "mcq" && v.path === "/correct_answer") open.add("/options");
  }
  // A path under another open path adds nothing.
  const paths = [...open].sort();
  return { open: paths.filter((p) => !paths.some((q) => q !== p && within(p, q))) };
}

/** Whether `path` is `scope` or lies under it. */
const within = (path: string, scope: string) => path === scope || path.startsWith(`${scope}/`);

export type PatchResult =
  | { ok: true; content: unknown; applied: PatchOp[]; refused: string[] }
  | { ok: false; refused: string[]; failure: string };

/**
 * Applies the model's patch to a copy of `content`. A change outside the scope touches a locked
 * field: it is refused as a regression (not applied, its path reported), the changes inside the
 * scope are applied; a patch with nothing left to apply is a failed attempt. Paths are JSON
 * Pointers; setting a key under a missing object creates it, an array index must exist or be the next.
 */
export function applyPatch(content: unknown, ops: readonly PatchOp[], scope: PatchScope): PatchResult {
  const refused = ops.filter((op) => !scope.open.some((open) => within(op.path, open))).map((op) => op.path);
  const allowed = ops.filter((op) => scope.open.some((open) => within(op.path, open)));
  if (allowed.length === 0)
    return { ok: false, refused, failure: `the patch touched only locked fields (${refused.join(", ")})` };
  const next = structuredClone(content);
  const applied: PatchOp[] = [];
  for (const op of allowed) {
    const segments = fromPointer(op.path);
    const last = segments.at(-1);
    if (last === undefined) return { ok: false, refused, failure: "the patch wrote the whole content" };
    let node: unknown = next;
    for (const key of segments.slice(0, -1)) {
      const container = node as Record<string, unknown>;
      if (!Object.hasOwn(container, key) || typeof container[key] !== "object" || container[key] === null) {
        if (op.op === "remove") break;
        if (Array.isArray(container))
          return { ok: false, refused, failure: `the patch path ${op.path} does not exist` };
        Object.defineProperty(container, key, {
          value: {},
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      node = container[key];
    }
    if (typeof node !== "object" || node === null) continue;
    if (Array.isArray(node)) {
      const index = Number(last);
      if (!Number.isInteger(index) || index < 0 || index > node.length)
        return { ok: false, refused, failure: `the patch path ${op.path} is not an index of the array` };
      if (op.op === "remove") {
        if (index < node.length) node.splice(index, 1);
      } else node[index] = op.value;
    } else if (op.op === "remove") {
      delete (node as Record<string, unknown>)[last];
    } else {
      // Own data property, never a prototype setter (`__proto__` in a hostile answer).
      Object.defineProperty(node, last, {
        value: op.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    applied.push(
      op.op === "remove" ? { op: "remove", path: op.path } : { op: "set", path: op.path, value: op.value },
    );
  }
  return { ok: true, content: next, applied, refused };
}

const PRIMITIVES = [{ type: "string" }, { type: "number" }, { type: "boolean" }];

/** The schema node at a pointer of a content schema (through properties and items), if it is plain. */
function schemaAt(schema: unknown, path: string): Record<string, unknown> | undefined {
  let node = schema;
  for (const key of fromPointer(path)) {
    if (!isRecord(node)) return undefined;
    if (/^\d+$/.test(key) && isRecord(node.items)) node = node.items;
    else node = isRecord(node.properties) ? node.properties[key] : undefined;
  }
  return isRecord(node) ? node : undefined;
}

/**
 * A schema node without descriptions and bounds: every character of the tool is sent with every
 * call, and the bounds are checked on the answer anyway (the pack's rules and Ajv), as the
 * structured-output subset would leave them to be.
 */
const DROPPED_KEYWORDS = new Set([
  "description",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
]);
function withoutDescriptions(node: unknown): Record<string, unknown> {
  const walk = (value: unknown, inProperties: boolean): unknown => {
    if (Array.isArray(value)) return value.map((v) => walk(v, false));
    if (!isRecord(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(value)) {
      // Inside `properties` the keys are field names (a field may be called "description"), not keywords.
      if (!inProperties && DROPPED_KEYWORDS.has(key)) continue;
      out[key] = walk(sub, !inProperties && (key === "properties" || key === "$defs"));
    }
    return out;
  };
  return walk(node, false) as Record<string, unknown>;
}

const primitiveTypes = new Set(["string", "number", "integer", "boolean", "null"]);

/**
 * The JSON Schema of a patch answer: changed values only, by path. The value is typed (so that the
 * provider can constrain the answer, structured.ts) when the content schema gives every open path a
 * scalar or a closed object or array of them: the union of those nodes; untyped otherwise.
 */
export function patchJsonSchema(scope: PatchScope, contentSchema: unknown): Record<string, unknown> {
  const values: Record<string, unknown>[] = [...PRIMITIVES];
  let typed = true;
  for (const path of scope.open) {
    const node = schemaAt(contentSchema, path);
    const types = node ? (Array.isArray(node.type) ? node.type : [node.type]) : [undefined];
    if (node && types.every((t) => typeof t === "string" && primitiveTypes.has(t))) continue;
    // An array's own items are reached field by field (/options/2/text), so the array schema alone
    // covers it: its item schema is not repeated beside it (every character is sent with every call).
    if (node && (types.includes("object") || types.includes("array"))) {
      const stripped = withoutDescriptions(node);
      if (!values.some((v) => JSON.stringify(v) === JSON.stringify(stripped))) values.push(stripped);
    } else typed = false;
  }
  return {
    type: "array",
    items: {
      type: "object",
      // No `op`: an item without a value removes the field (the parser reads both forms).
      properties: { path: { type: "string" }, value: typed ? { anyOf: values } : {} },
      required: ["path"],
      additionalProperties: false,
    },
  };
}
