import { escapeSegment } from "../../pointer.js";

/** Small helpers the json pack's modules share: type guards, pointer segments, message text. */

export type SchemaObject = Record<string, unknown>;
export type Segment = string | number;

export function isRecord(value: unknown): value is SchemaObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Own members only: a schema or instance key named `constructor` must never find Object.prototype's. */
export function hasOwn(object: object, key: string): boolean {
  return Object.hasOwn(object, key);
}

/** A JSON-pointer segment as Ajv expects it inside a URI fragment (`root#/properties/a%20b`). */
export function fragmentSegment(segment: string | number): string {
  return encodeURIComponent(escapeSegment(String(segment)));
}

export function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function setOwn(target: SchemaObject, key: string, value: unknown): void {
  // defineProperty, so that a "__proto__" key from JSON stays an ordinary property.
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function show(value: unknown): string {
  return clip(JSON.stringify(value) ?? String(value), 60);
}

export function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number" && Number.isInteger(value)) return "integer";
  return typeof value;
}
