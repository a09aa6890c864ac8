import type { Pack } from "../pack.js";
import { jsonPack } from "./json.js";
import { mcqPack } from "./mcq.js";

/** The packs every deployment has. The `code` pack joins them with the judge issue. */
export const builtinPacks: readonly Pack<any, any>[] = [mcqPack, jsonPack];
