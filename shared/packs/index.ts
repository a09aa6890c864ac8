import type { Pack } from "../pack.js";
import { codePack } from "./code.js";
import { jsonPack } from "./json.js";
import { mcqPack } from "./mcq.js";

/** The packs every deployment has. */
export const builtinPacks: readonly Pack<any, any>[] = [mcqPack, jsonPack, codePack];
