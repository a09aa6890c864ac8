import { packFromDefinition } from "../shared/packs/declarative.js";
const base = { kind: "probe", description: "d" };
for (const d of [{ kind: "probe" }, { ...base, rules: [{ id: "r", type: "spell", path: "/a" }] }, { ...base, rules: [{ id: "r", type: "regex", path: "/a" }] }, { ...base, rulez: [] }, { ...base, schema: { type: "strnig" } }, { ...base, rules: [{ id: "r", type: "length", path: "/a" }] }, []])
  try { packFromDefinition(d, "pack file x.json"); } catch (e) { console.log((e as Error).message); }
