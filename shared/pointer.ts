/** JSON pointers (RFC 6901): how violations and repairs name a place in a draft's content. */

/** One reference token: `~` as `~0`, `/` as `~1`. */
export function escapeSegment(segment: string): string {
  // Most keys need no escaping: no regular expression for them (this runs for every key walked).
  if (!segment.includes("~") && !segment.includes("/")) return segment;
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function unescapeSegment(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

export function toPointer(segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${escapeSegment(String(s))}`).join("");
}

export function fromPointer(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map(unescapeSegment);
}

/**
 * The value a pointer names in a document, or undefined when any step is missing. Own properties
 * only: a draft that lacks `constructor` has no value there, whatever Object.prototype holds.
 */
export function valueAt(document: unknown, pointer: string): unknown {
  let node = document;
  for (const key of fromPointer(pointer)) {
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
