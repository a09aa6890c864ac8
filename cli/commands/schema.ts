/**
 * `redraft schema bundle <file>`: one compound schema document from a schema and the local files its
 * `$ref`s name, so that a schema made of several files can travel in `context.schema` (redraft fetches
 * nothing). Each referenced file is embedded under `$defs` (`definitions` before 2019-09) with its
 * `$id` set to its path relative to the root file, which is what the reference already resolves to, so
 * the references stay as written. A `$ref` to a URL is refused unless `--with url=file` names a local
 * copy of it.
 */
import { readFile, realpath, stat } from "node:fs/promises";
import { dirname, relative, resolve, sep } from "node:path";
import { UsageError } from "../../app/inputs.js";
import { decodeText } from "../../app/text-encoding.js";
import { defineCommand } from "./define.js";

type Schema = Record<string, unknown>;

const isRecord = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);
const isUrl = (ref: string) => /^[a-z][a-z0-9+.-]*:/i.test(ref);

/** Every `$ref` string in a schema (data keywords included: a false positive only loads one more file). */
function refsOf(schema: unknown): string[] {
  const refs: string[] = [];
  const stack = [schema];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) stack.push(...value);
    else if (isRecord(value)) {
      for (const [key, child] of Object.entries(value)) {
        if (key === "$ref" && typeof child === "string") refs.push(child);
        else stack.push(child);
      }
    }
  }
  return refs;
}

/**
 * A schema file's object. Only a regular file is opened (a FIFO or a device would block the command or
 * never end); its bytes are UTF-8, or UTF-16 when a byte-order mark says so.
 */
async function readSchema(path: string): Promise<Schema> {
  let bytes: Buffer;
  try {
    if (!(await stat(path)).isFile())
      throw new UsageError(`${path} is not a regular file; a schema must be one`);
    bytes = await readFile(path);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read ${path}`);
  }
  const decoded = decodeText(bytes);
  if ("problem" in decoded) throw new UsageError(`${path} ${decoded.problem}`);
  const { text } = decoded;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isRecord(parsed)) throw new Error("not an object");
    return parsed;
  } catch (error) {
    throw new UsageError(`${path} is not a JSON Schema object: ${(error as Error).message}`);
  }
}

/**
 * The compound document: the root schema with every file its references reach (transitively) embedded.
 * `urls` maps a referenced URL (without fragment) to a local file standing in for it.
 */
async function bundleSchema(
  rootFile: string,
  urls: ReadonlyMap<string, string> = new Map(),
): Promise<Schema> {
  // The json pack (Ajv and its dialects) loads when a bundle is made, not with every command's definition.
  const { dialectOf } = await import("../../shared/packs/json/json.js");
  const root = await readSchema(rootFile);
  const rootDir = dirname(resolve(rootFile));
  // Where the folder really is: a file reached through a symbolic link must really be inside it too.
  const realRootDir = await realpath(rootDir);
  const embedded = new Map<string, Schema>();
  // Files to read: their id in the bundle, where they are on disk, the directory their refs start from,
  // and the files that led to it (a file that leads back to one of them is a cycle, refused).
  const queue: { schema: Schema; base: string | undefined; dir: string; file: string; chain: string[] }[] = [
    { schema: root, base: undefined, dir: rootDir, file: resolve(rootFile), chain: [] },
  ];
  const shown = (file: string) => relative(rootDir, file).split(sep).join("/") || file;
  for (let item = queue.shift(); item; item = queue.shift()) {
    const chain = [...item.chain, item.file];
    for (const ref of refsOf(item.schema)) {
      const target = ref.split("#")[0] ?? "";
      if (target === "") continue;
      let id: string;
      let file: string;
      let dir: string;
      if (isUrl(target) || (item.base !== undefined && isUrl(item.base))) {
        const url = new URL(target, item.base).href;
        const local = urls.get(url);
        if (local === undefined)
          throw new UsageError(`$ref "${ref}" names a URL; give a local copy with --with ${url}=<file>`);
        id = url;
        file = resolve(local);
        dir = dirname(file);
      } else {
        file = resolve(item.dir, target);
        const path = relative(rootDir, file).split(sep).join("/");
        if (path.startsWith("../"))
          throw new UsageError(
            `$ref "${ref}" leaves the root schema's folder (${path}); bundle from a common folder`,
          );
        id = path;
        dir = dirname(file);
        const real = await realpath(file).catch(() => file);
        if (real !== realRootDir && !real.startsWith(realRootDir + sep))
          throw new UsageError(
            `$ref "${ref}" names ${path}, a link to ${real} outside the root schema's folder; copy the file into the folder`,
          );
      }
      // A file naming itself is one resource; one naming a file that led to it closes a cycle.
      if (file !== item.file && chain.includes(file))
        throw new UsageError(
          `$ref "${ref}" in ${shown(item.file)} leads back to ${shown(file)}: a cycle of files (${[...chain.slice(chain.indexOf(file)), file].map(shown).join(" -> ")}); move the shared part into one file`,
        );
      if (embedded.has(id) || file === resolve(rootFile)) continue;
      const schema = await readSchema(file);
      const { $schema: _dialect, ...rest } = schema;
      const copy: Schema = { ...rest, [dialectOf(root) === "draft-04" ? "id" : "$id"]: id };
      embedded.set(id, copy);
      queue.push({ schema, base: isUrl(id) ? id : undefined, dir, file, chain });
    }
  }
  if (embedded.size === 0) return root;
  const dialect = dialectOf(root);
  const legacy = dialect === "draft-07" || dialect === "draft-06" || dialect === "draft-04";
  const holder = legacy ? "definitions" : "$defs";
  const existing = isRecord(root[holder]) ? root[holder] : {};
  const added: Schema = {};
  for (const [id, schema] of embedded) {
    let key = `bundled:${id}`;
    while (key in existing || key in added) key += "_";
    added[key] = schema;
  }
  return { ...root, [holder]: { ...existing, ...added } };
}

/** `redraft schema bundle` on the command line. */
export const schemaCommand = defineCommand("schema", (cli) => {
  cli
    .command("schema")
    .description("work with JSON Schemas for the json kind")
    .command("bundle")
    .description(
      "write one compound schema document from a schema and the local files its $refs name (nothing is fetched)",
    )
    .argument("<file>")
    .option("--with <url=file...>", "a local copy of a schema a $ref names by URL; repeat for more")
    .addHelpText("after", "\nExample:\n  $ npx redraft schema bundle schemas/order.json > order.bundled.json")
    .action(async (file: string, cmd: { with?: string[] }) => {
      const urls = new Map<string, string>();
      for (const pair of cmd.with ?? []) {
        const at = pair.lastIndexOf("=");
        if (at <= 0) throw new UsageError(`--with ${pair}: expected <url>=<file>`);
        urls.set(new URL(pair.slice(0, at)).href, pair.slice(at + 1));
      }
      process.stdout.write(`${JSON.stringify(await bundleSchema(file, urls), null, 2)}\n`);
    });
});
