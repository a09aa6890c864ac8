/**
 * Multi-file schemas: a compound schema document (referenced schemas embedded with their `$id`) resolves
 * in place with nothing fetched, and `redraft schema bundle` writes one from a schema and its sibling
 * files; a URL is refused unless a local copy is given.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileJsonSchema } from "../../shared/packs/json/json.js";
import { validateDraft } from "../../shared/validate.js";
import { redraft } from "../helpers/run-cli.js";

let dir: string;
const write = (name: string, value: unknown) => writeFile(join(dir, name), JSON.stringify(value));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "redraft-bundle-"));
  await mkdir(join(dir, "sub"));
  await write("root.json", {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: { path: { $ref: "base.json#/definitions/path" }, item: { $ref: "sub/item.json" } },
  });
  await write("base.json", { definitions: { path: { type: "string", pattern: "^/" } } });
  await write("sub/item.json", {
    type: "object",
    properties: { n: { $ref: "num.json" } },
    additionalProperties: false,
  });
  await write("sub/num.json", { type: "integer" });
  await write("remote.json", {
    type: "object",
    properties: { v: { $ref: "https://example.org/schemas/v.json" } },
  });
  await write("v.json", { type: "string", minLength: 2 });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const draftOf = (schema: unknown, content: unknown) => ({
  id: "b",
  kind: "json",
  content,
  context: { schema },
});

describe("a compound schema document", () => {
  it("resolves references to the schemas it embeds by $id, fetching nothing", async () => {
    const compound = {
      $id: "https://example.org/order.json",
      type: "object",
      properties: { customer: { $ref: "customer.json" } },
      $defs: {
        customer: {
          $id: "https://example.org/customer.json",
          type: "object",
          required: ["name"],
          properties: { name: { type: "string" }, address: { $ref: "address.json" } },
        },
        address: { $id: "https://example.org/address.json", type: "object", required: ["city"] },
      },
    };
    const report = await validateDraft(draftOf(compound, { customer: { name: "A", address: {} } }));
    expect(report.violations.map((v) => [v.ruleId, v.path])).toEqual([
      ["schema:required", "/customer/address/city"],
    ]);
  });
});

describe("redraft schema bundle", () => {
  it("embeds the sibling files a schema's relative $refs name, transitively, and the bundle validates", async () => {
    const out = await redraft(["schema", "bundle", join(dir, "root.json")]);
    expect(out.code).toBe(0);
    const bundled = JSON.parse(out.stdout);
    expect(
      Object.values(bundled.definitions)
        .map((s) => (s as { $id: string }).$id)
        .sort(),
    ).toEqual(["base.json", "sub/item.json", "sub/num.json"]);
    // The unbundled schema is refused: its references leave it.
    const original = { ...bundled, definitions: undefined };
    expect(compileJsonSchema(original).ok).toBe(false);
    const report = await validateDraft(draftOf(bundled, { path: "x", item: { n: "a", z: 1 } }));
    expect(
      report.violations.filter((v) => v.severity === "error").map((v) => `${v.ruleId} ${v.path}`),
    ).toEqual(["schema:pattern /path", "schema:type /item/n"]);
    // The key the embedded item schema forbids is removed by repair, as in a one-file schema.
    expect(report.repairs.map((r) => r.path)).toEqual(["/item/z"]);
  });

  it("refuses a $ref to a URL, unless --with gives a local copy", async () => {
    const refused = await redraft(["schema", "bundle", join(dir, "remote.json")]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /names a URL; give a local copy with --with https:\/\/example\.org\/schemas\/v\.json=<file>/,
    );
    const given = await redraft([
      "schema",
      "bundle",
      join(dir, "remote.json"),
      "--with",
      `https://example.org/schemas/v.json=${join(dir, "v.json")}`,
    ]);
    expect(given.code).toBe(0);
    const report = await validateDraft(draftOf(JSON.parse(given.stdout), { v: "x" }));
    expect(report.violations.map((v) => v.ruleId)).toEqual(["schema:minLength"]);
  });

  describe("issue 34: what leaves the folder, is not a file, or loops is refused in one line", () => {
    /** A bundle that must be refused: exit code, and its one-line message. */
    const refusedWith = async (root: string) => {
      const out = await redraft(["schema", "bundle", join(dir, root)]);
      expect(out.code).not.toBe(0);
      expect(out.stdout).toBe("");
      expect(out.stderr.trim().split("\n")).toHaveLength(1);
      return out.stderr.trim();
    };

    it("refuses a symbolic link out of the root schema's folder (a plain ../ already was)", async () => {
      const outside = await mkdtemp(join(tmpdir(), "redraft-bundle-outside-"));
      try {
        await writeFile(join(outside, "secret.json"), JSON.stringify({ type: "string", title: "outside" }));
        await symlink(join(outside, "secret.json"), join(dir, "link.json"));
        await write("links.json", { properties: { s: { $ref: "link.json" } } });
        expect(await refusedWith("links.json")).toMatch(
          /\$ref "link\.json" names link\.json, a link to .*secret\.json outside the root schema's folder/,
        );
        // A link that stays inside is followed as before.
        await symlink(join(dir, "v.json"), join(dir, "inside.json"));
        await write("inside-root.json", { properties: { s: { $ref: "inside.json" } } });
        expect((await redraft(["schema", "bundle", join(dir, "inside-root.json")])).code).toBe(0);
      } finally {
        await rm(outside, { recursive: true, force: true });
      }
    });

    it("refuses a FIFO (or anything not a regular file) without opening it", async () => {
      execFileSync("mkfifo", [join(dir, "pipe.json")]);
      await write("fifo-root.json", { properties: { p: { $ref: "pipe.json" } } });
      expect(await refusedWith("fifo-root.json")).toMatch(
        /pipe\.json is not a regular file; a schema must be one/,
      );
      expect(await refusedWith("pipe.json")).toMatch(/pipe\.json is not a regular file/);
      await mkdir(join(dir, "folder.json"));
      await write("folder-root.json", { properties: { p: { $ref: "folder.json" } } });
      expect(await refusedWith("folder-root.json")).toMatch(/folder\.json is not a regular file/);
    }, 30_000);

    it("refuses a cycle of files, naming it", async () => {
      await write("cycle-a.json", { properties: { b: { $ref: "cycle-b.json" } } });
      await write("cycle-b.json", { properties: { c: { $ref: "cycle-c.json" } } });
      await write("cycle-c.json", { properties: { a: { $ref: "cycle-a.json#/properties/b" } } });
      expect(await refusedWith("cycle-a.json")).toMatch(
        /\$ref "cycle-a\.json#\/properties\/b" in cycle-c\.json leads back to cycle-a\.json: a cycle of files \(cycle-a\.json -> cycle-b\.json -> cycle-c\.json -> cycle-a\.json\)/,
      );
      // Two files naming one shared file (a diamond) is no cycle.
      await write("diamond.json", { properties: { x: { $ref: "d1.json" }, y: { $ref: "d2.json" } } });
      await write("d1.json", { properties: { s: { $ref: "v.json" } } });
      await write("d2.json", { properties: { s: { $ref: "v.json" } } });
      expect((await redraft(["schema", "bundle", join(dir, "diamond.json")])).code).toBe(0);
    });

    it("refuses a schema file in another encoding", async () => {
      await writeFile(join(dir, "latin1.json"), Buffer.from('{"title":"café"}', "latin1"));
      expect(await refusedWith("latin1.json")).toMatch(
        /latin1\.json is not UTF-8 text \(byte 0xE9 at offset 13/,
      );
      // A referenced file in UTF-16 without a mark, or invalid UTF-8, is named the same way.
      await writeFile(join(dir, "utf16.json"), Buffer.from('{"title":"café"}', "utf16le"));
      await write("utf16-root.json", { properties: { t: { $ref: "utf16.json" } } });
      expect(await refusedWith("utf16-root.json")).toMatch(
        /utf16\.json is not UTF-8 text \(a NUL byte at offset 1: UTF-16 without a byte-order mark\?\)/,
      );
      await writeFile(
        join(dir, "invalid.json"),
        Buffer.concat([Buffer.from('{"title":"caf'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
      );
      expect(await refusedWith("invalid.json")).toMatch(
        /invalid\.json is not UTF-8 text \(byte 0xC3 at offset 13/,
      );
    });

    it("reads a schema file in UTF-16 with a byte-order mark as the mark says", async () => {
      const schema = { type: "string", title: "Zoë's café", enum: ["café"] };
      await writeFile(
        join(dir, "utf16-mark.json"),
        Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(JSON.stringify(schema), "utf16le").swap16()]),
      );
      await write("utf16-mark-root.json", { properties: { t: { $ref: "utf16-mark.json" } } });
      const out = await redraft(["schema", "bundle", join(dir, "utf16-mark-root.json")]);
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toContain('"title": "Zoë\'s café"');
      const report = await validateDraft(draftOf(JSON.parse(out.stdout), { t: "café" }));
      expect(report.violations).toEqual([]);
    });
  });
});
