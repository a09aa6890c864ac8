import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { type Behaviour, BehaviourCorrector, type CorrectorProfile, describe } from "./corrector.js";

const behaviourProfile = (name: string, summary: string, behaviour: Behaviour): CorrectorProfile => ({
  name,
  summary: `${summary} (${describe(behaviour)})`,
  create: (references, seed) => new BehaviourCorrector(references, behaviour, seed),
});

/**
 * The built-in model behaviours, each a different way a real model gets a correction wrong. They are
 * knobs on one simulated corrector, not measurements of any real model: they show how each policy
 * copes with a kind of failure, not how often a given model fails that way.
 */
export const BUILT_IN_PROFILES: readonly CorrectorProfile[] = [
  behaviourProfile(
    "sloppy",
    "sloppy but fixable: fixes most of what it is told, rarely breaks anything, but often fills absent optional fields with empty strings (seed 001's fault) and now and then answers with text",
    { p: 0.85, c: 0.3, s: 0.05, g: 0.02, q: 0.6, r: 0.05, m: 0.05 },
  ),
  behaviourProfile(
    "stubborn",
    "stubborn on one rule per kind: fixes the rest fairly well, but never lengthens or shortens an option to match the others (mcq) and never rewrites a date or timestamp into the schema's format (json)",
    {
      p: 0.75,
      c: 0.3,
      s: 0.3,
      g: 0.05,
      q: 0.2,
      r: 0.1,
      m: 0.03,
      stubborn: ["nbme_answer_homogeneity", "schema:format"],
    },
  ),
  behaviourProfile(
    "regressing",
    "regressing on unrelated fields: fixes what it is told, but often changes a correct field next to a fix or breaks something nobody flagged",
    { p: 0.8, c: 0.3, s: 0.1, g: 0.3, q: 0.2, r: 0.4, m: 0.03 },
  ),
];

const ProfileModule = z.object({
  name: z.string().min(1),
  summary: z.string(),
  create: z.custom<CorrectorProfile["create"]>((value) => typeof value === "function", {
    message: "create must be a function (references, seed) => { answer(request) }",
  }),
});

/**
 * `--corrector` values: a built-in profile's name, or the path of a module whose default export (or
 * `profile` export) is a {@link CorrectorProfile}.
 */
export async function loadProfile(spec: string): Promise<CorrectorProfile> {
  const builtIn = BUILT_IN_PROFILES.find((p) => p.name === spec);
  if (builtIn) return builtIn;
  const module = (await import(pathToFileURL(resolve(spec)).href)) as {
    default?: unknown;
    profile?: unknown;
  };
  const parsed = ProfileModule.safeParse(module.default ?? module.profile);
  if (!parsed.success)
    throw new Error(
      `--corrector ${spec}: not a built-in profile (${BUILT_IN_PROFILES.map((p) => p.name).join(", ")}) and its module exports no corrector profile: ${z.prettifyError(parsed.error)}`,
    );
  return parsed.data as CorrectorProfile;
}
