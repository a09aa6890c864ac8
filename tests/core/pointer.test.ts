import { describe, expect, it } from "vitest";
import { fromPointer, toPointer, valueAt } from "../../shared/pointer.js";

describe("JSON pointers", () => {
  it("escape and unescape ~ and / in reference tokens (RFC 6901)", () => {
    expect(toPointer(["a/b", "m~n", 0])).toBe("/a~1b/m~0n/0");
    expect(fromPointer("/a~1b/m~0n/0")).toEqual(["a/b", "m~n", "0"]);
    expect(fromPointer("")).toEqual([]);
  });

  it("name values by own properties only: an inherited member is no value of the draft", () => {
    const doc = JSON.parse('{"a":{"b":[10,{"c":null}]},"__proto__":{"x":1}}');
    expect(valueAt(doc, "/a/b/1/c")).toBeNull();
    expect(valueAt(doc, "/a/b/0")).toBe(10);
    expect(valueAt(doc, "")).toBe(doc);
    expect(valueAt(doc, "/__proto__/x")).toBe(1);
    expect(valueAt(doc, "/constructor")).toBeUndefined();
    expect(valueAt(doc, "/a/toString")).toBeUndefined();
    expect(valueAt(doc, "/a/b/length")).toBe(2); // an array's length is its own property
    expect(valueAt(doc, "/a/b/9/c")).toBeUndefined();
  });
});
