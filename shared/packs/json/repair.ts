/**
 * The deterministic repair walk: removes properties the schema forbids and, along the instance locations
 * where Ajv reported an error, optional fields whose value breaks their sub-schema and carries no
 * information (lossless, the default) or any such optional field (aggressive, asked for per kind).
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import type { Repair } from "../../draft.js";
import { escapeSegment, unescapeSegment } from "../../pointer.js";
import { JSON_RULE_IDS } from "./ids.js";
import { describeValueError } from "./messages.js";
import { clip, isRecord, type SchemaObject, type Segment, setOwn } from "./util.js";
import { MAX_DEPTH, type SchemaViews, type View } from "./views.js";

/** Keywords whose failure on a container value (object/array) makes the whole optional value removable (aggressive only). */
const CONTAINER_REMOVABLE = new Set(["type", "enum", "const"]);

/**
 * What a deterministic repair may delete. `lossless`: a key the schema forbids, and an optional field
 * that fails its sub-schema while holding nothing (an empty or whitespace-only string, or null where
 * the field is not nullable). `aggressive` (seed 001): any optional field that fails its sub-schema,
 * a container only when its own type/enum/const rules it out. `off`: nothing.
 */
export const REPAIR_MODES = ["lossless", "aggressive", "off"] as const;
export type RepairMode = (typeof REPAIR_MODES)[number];

/** A value that carries no information: what a lossless repair may delete when its field is optional and it fails. */
export function carriesNothing(value: unknown): boolean {
  return value === null || (typeof value === "string" && value.trim() === "");
}

/** Keywords whose sub-schema is one alternative or a condition: an error under them does not rule the value out. */
const BRANCH_SEGMENT = /\/(anyOf|oneOf|not|if|then|else)\//;

/** An instance location during the repair walk: its pointer (as Ajv writes `instancePath`) and its segments. */
export interface Place {
  readonly pointer: string;
  readonly path: readonly Segment[];
}

export const ROOT_PLACE: Place = { pointer: "", path: [] };

function child(at: Place, segment: Segment): Place {
  return { pointer: `${at.pointer}/${escapeSegment(String(segment))}`, path: [...at.path, segment] };
}

export interface RepairWalk {
  readonly repairs: Repair[];
  /** Lossless or aggressive (`off` never starts a walk). */
  readonly mode: Exclude<RepairMode, "off">;
  keep?: (path: readonly Segment[]) => boolean;
  /** Validator of the sub-schema at a URI-fragment pointer, compiled by the root's Ajv; undefined if none. */
  readonly validatorAt: (ptr: string) => ValidateFunction | undefined;
}

/**
 * The instance locations Ajv's errors name, as a tree of keys (array indices as strings) from the root:
 * the walk looks each key up in its parent's node, which costs no pointer string for the keys it skips.
 */
export interface ErrorTree {
  /** An error is here or below. */
  dirty: boolean;
  /** Ajv itself reports this property as not allowed (additional or unevaluated). */
  extra: boolean;
  readonly children: Map<string, ErrorTree>;
}

const newNode = (): ErrorTree => ({ dirty: false, extra: false, children: new Map() });

/** The node at `pointer` (as Ajv writes `instancePath`), made with the nodes on its way when missing. */
function nodeAt(root: ErrorTree, pointer: string, mark: (node: ErrorTree) => void): ErrorTree {
  let node = root;
  mark(node);
  if (pointer === "") return node;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.includes("~") ? unescapeSegment(raw) : raw;
    let next = node.children.get(key);
    if (!next) {
      next = newNode();
      node.children.set(key, next);
    }
    node = next;
    mark(node);
  }
  return node;
}

const markDirty = (node: ErrorTree) => {
  node.dirty = true;
};

/** The root is always dirty: the walk starts there even when no error names a place below it. */
export function errorTree(errors: readonly ErrorObject[]): ErrorTree {
  const root = newNode();
  root.dirty = true;
  for (const error of errors) {
    const at = nodeAt(root, error.instancePath, markDirty);
    const pointer = extraPointer(error);
    if (pointer !== undefined) nodeAt(at, pointer.slice(error.instancePath.length), () => {}).extra = true;
  }
  return root;
}

/** Keywords whose error names a property that is not allowed where it is. */
const EXTRA_KEYWORDS = new Set(["additionalProperties", "unevaluatedProperties"]);

/** The pointer of the property an extra-property error names, or undefined for any other error. */
export function extraPointer(error: ErrorObject): string | undefined {
  if (!EXTRA_KEYWORDS.has(error.keyword)) return undefined;
  const params = error.params as Record<string, unknown>;
  const key = params.additionalProperty ?? params.unevaluatedProperty;
  return typeof key === "string" ? `${error.instancePath}/${escapeSegment(key)}` : undefined;
}

/**
 * Why an optional value should go, or undefined to keep it. Lossless: an empty value that fails its
 * sub-schema. Aggressive: also any scalar that fails it, and a container whose own type/enum/const rules
 * it out; an error of one alternative (`oneOf: [object, null]`'s "must be null") never does, since
 * another alternative may accept the container once what is inside it is fixed.
 */
function removalReason(value: unknown, roots: readonly View[], walk: RepairWalk): string | undefined {
  if (walk.mode === "lossless" && !carriesNothing(value)) return undefined;
  const scalar = typeof value !== "object" || value === null;
  for (const root of roots) {
    const validate = walk.validatorAt(root.ptr);
    if (!validate) continue;
    let conforms: boolean;
    try {
      conforms = validate(value) === true;
    } catch {
      // A sub-schema compiled apart from its root can lose its dynamic scope, and Ajv's code for it may
      // then recurse without end: undecidable, so the value stays.
      return undefined;
    }
    if (conforms) continue;
    const errors = validate.errors ?? [];
    const decisive = scalar
      ? errors[0]
      : errors.find(
          (e) =>
            e.instancePath === "" && CONTAINER_REMOVABLE.has(e.keyword) && !BRANCH_SEGMENT.test(e.schemaPath),
        );
    if (decisive)
      return `${clip(JSON.stringify(value) ?? String(value), 60)} ${describeValueError(decisive)}`;
  }
  return undefined;
}

/** The value with its repairs applied; the same object when nothing below it changed. */
export function repairValue(
  schema: SchemaViews,
  value: unknown,
  views: readonly View[],
  at: Place,
  errors: ErrorTree,
  walk: RepairWalk,
  depth: number,
): unknown {
  if (views.length === 0 || depth > MAX_DEPTH || !errors.dirty) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((item, index) => {
      if (typeof item !== "object" || item === null) return; // array elements are never removed
      const below = errors.children.get(String(index));
      if (!below) return;
      const fixed = repairValue(
        schema,
        item,
        schema.itemViews(views, index),
        child(at, index),
        below,
        walk,
        depth + 1,
      );
      if (fixed !== item) {
        out ??= value.slice();
        out[index] = fixed;
      }
    });
    return out ?? value;
  }
  if (!isRecord(value)) return value;
  let out: SchemaObject | undefined;
  const shape = schema.shape(views);
  const keys = Object.keys(value);
  let remaining = keys.length;
  const remove = (key: string, place: Place, before: unknown, message: string) => {
    out ??= { ...value };
    delete out[key];
    remaining -= 1;
    walk.repairs.push({
      ruleId: JSON_RULE_IDS.repair,
      action: "remove",
      path: place.pointer,
      before,
      message,
    });
  };
  for (const key of keys) {
    // Without an error at or below it (or Ajv naming it not allowed), a value conforms: nothing there to
    // repair, and nothing to look up.
    const below = errors.children.get(key);
    if (!below) continue;
    const cv = schema.childViews(views, key);
    // Where the walk cannot see every sub-schema that applies, it steps aside; the check says so.
    if (cv.undecided !== undefined) continue;
    if (!cv.forbidden && !below.dirty) continue;
    const place = child(at, key);
    const before = value[key];
    const removable = !shape.kept.has(key) && remaining > shape.minProperties && !walk.keep?.(place.path);
    if (cv.forbidden) {
      // Removed only when Ajv agrees that the property is not allowed there.
      if (removable && below.extra) {
        const parent = at.pointer ? ` in ${at.pointer}` : "";
        remove(
          key,
          place,
          before,
          `removed ${place.pointer}: the schema allows no property "${key}"${parent}`,
        );
      }
      continue;
    }
    const fixed =
      typeof before === "object" && before !== null
        ? repairValue(schema, before, cv.views, place, below, walk, depth + 1)
        : before;
    const broken = removable ? removalReason(fixed, cv.roots, walk) : undefined;
    if (broken !== undefined) {
      remove(key, place, before, `removed optional field ${place.pointer}: ${broken}`);
    } else if (fixed !== before) {
      out ??= { ...value };
      setOwn(out, key, fixed);
    }
  }
  return out ?? value;
}
