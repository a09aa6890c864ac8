/**
 * The denominator of the proportional score (seed 001): how many fields the schema describes, counted
 * against the instance.
 */
import { hasOwn, isRecord } from "./util.js";
import { MAX_DEPTH, type SchemaViews, type UnitPlan, type View } from "./views.js";

/** Units below a value the schema leaves open: each nested property or element counts. */
function openUnits(value: unknown, depth: number): number {
  if (depth > MAX_DEPTH || typeof value !== "object" || value === null) return 0;
  let units = 0;
  for (const child of Array.isArray(value) ? value : Object.values(value))
    units += 1 + openUnits(child, depth + 1);
  return units;
}

const NO_TRAIL: readonly object[] = Object.freeze([]);

/**
 * Units below `value` (not counting the value itself). With `describeAbsent`, an absent or mistyped
 * value still counts the fields its schema describes, so removing such a value leaves the total as it was.
 */
export function unitsBelow(
  schema: SchemaViews,
  value: unknown,
  views: readonly View[],
  describeAbsent: boolean,
  depth: number,
  trail: readonly object[] = NO_TRAIL,
): number {
  if (depth > MAX_DEPTH) return 0;
  if (views.length === 0) return openUnits(value, depth);
  const plan = schema.unitPlan(views);
  const present =
    value === undefined ||
    (typeof value === "object" &&
      value !== null &&
      !(Array.isArray(value) ? plan.allowsArray : plan.allowsObject))
      ? undefined
      : value;
  let absentTrail = NO_TRAIL;
  if (present === undefined) {
    if (!describeAbsent) return 0;
    // An absent value counts what its schema describes, which depends on the schema alone: counted once
    // per schema location. Only from the top of an absent subtree (no trail yet), where the count does
    // not depend on the way in.
    if (trail.length === 0 && plan.absent !== undefined) return plan.absent;
    // Nothing in the instance bounds the walk here: stop where a $ref recurses into a node already counted.
    if (views.some((v) => trail.includes(v.node))) return 0;
    absentTrail = [...trail, ...views.map((v) => v.node)];
  }
  const units = countBelow(schema, plan, present, views, depth, absentTrail);
  if (present === undefined && trail.length === 0) plan.absent = units;
  return units;
}

function countBelow(
  schema: SchemaViews,
  plan: UnitPlan,
  present: unknown,
  views: readonly View[],
  depth: number,
  absentTrail: readonly object[],
): number {
  const object = isRecord(present) ? present : undefined;
  let units = 0;
  const described = plan.described;
  plan.scalarLeaves ??= described.map(
    ([, cv]) => cv.views.length === 0 || schema.unitPlan(cv.views).described.length === 0,
  );
  const scalarLeaves = plan.scalarLeaves;
  for (let i = 0; i < described.length; i++) {
    const [key, cv] = described[i] as (typeof described)[number];
    const child = object && hasOwn(object, key) ? object[key] : undefined;
    // A present scalar under a schema that describes no properties counts itself only: what
    // unitsBelow would find, without its plan lookup.
    if (child !== undefined && (child === null || typeof child !== "object") && scalarLeaves[i]) units += 1;
    else units += 1 + unitsBelow(schema, child, cv.views, true, depth + 1, absentTrail);
  }
  if (object) {
    for (const key of Object.keys(object)) {
      if (plan.named.has(key)) continue;
      const cv = schema.childViews(views, key);
      if (cv.named) continue;
      if (cv.forbidden) units += 1;
      else if (cv.views.length > 0) units += 1 + unitsBelow(schema, object[key], cv.views, false, depth + 1);
      else units += 1 + openUnits(object[key], depth + 1);
    }
  }
  if (Array.isArray(present) && present.length > 0) {
    present.forEach((item, index) => {
      const itemViews = schema.itemViews(views, index);
      const inner =
        itemViews.length > 0
          ? unitsBelow(schema, item, itemViews, false, depth + 1)
          : openUnits(item, depth + 1);
      units += Math.max(1, inner);
    });
  } else if (present === undefined || Array.isArray(present)) {
    // An absent or empty array still counts its items' fields once.
    units += unitsBelow(schema, undefined, schema.itemViews(views, 0), true, depth + 1, absentTrail);
  }
  return units;
}
