import { markOwnPacks } from "../engine.js";
import type { AnyPack } from "../pack.js";
import { codePack } from "./code/code.js";
import { jsonPack } from "./json/json.js";
import { mcqPack } from "./mcq/mcq.js";

/** The packs every deployment has. */
export const builtinPacks: readonly AnyPack[] = [mcqPack, jsonPack, codePack];
markOwnPacks(builtinPacks);
