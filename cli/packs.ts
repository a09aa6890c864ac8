import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { InvalidPackError } from "../shared/errors.js";
import type { AnyPack } from "../shared/pack.js";
import { loadPackFile } from "../shared/packs/declarative.js";

const looksLikePack = (value: unknown): value is AnyPack =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as { kind?: unknown }).kind === "string" &&
  Array.isArray((value as { rules?: unknown }).rules);

/**
 * `--pack <file>`: a declarative pack file (JSON), or a TypeScript/JavaScript module whose exports
 * include one or more packs.
 */
export async function loadPacks(file: string): Promise<AnyPack[]> {
  if (!/\.(ts|mts|js|mjs)$/.test(file)) return [await loadPackFile(file)];
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new InvalidPackError(`${file}: cannot load the module: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const packs = Object.values(module).filter(looksLikePack);
  if (packs.length === 0)
    throw new InvalidPackError(`${file} exports no pack (an object with a kind and rules)`);
  return packs;
}
