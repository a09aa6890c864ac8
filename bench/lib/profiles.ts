import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import {
  type Behaviour,
  BehaviourCorrector,
  CHEAP_MODEL,
  CORRECTOR_MODEL,
  type CorrectorProfile,
  describe,
} from "./corrector.js";

const behaviourProfile = (
  name: string,
  summary: string,
  behaviour: Behaviour,
  ladder?: CorrectorProfile["ladder"],
): CorrectorProfile => ({
  name,
  summary: `${summary} (${describe(behaviour)})`,
  create: (references, seed) => new BehaviourCorrector(references, behaviour, seed),
  ...(ladder && { ladder }),
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
  // The profiles below read the prompt (its "Fix:" lines, its length) or answer the way a real model
  // answers when nothing constrains it: they price what a prompt's words and size buy.
  behaviourProfile(
    "follows-fixes",
    'reads the prompt: fixes a violation far more often when the prompt names its fix in a "Fix:" line than from the error message alone',
    { p: 0.6, c: 0.3, s: 0.1, g: 0.05, q: 0.2, r: 0.05, m: 0.03, withFix: 0.92 },
  ),
  behaviourProfile(
    "long-prompt",
    "reads the prompt: its fixes get worse as the prompt grows past 1,000 tokens",
    { p: 0.9, c: 0.3, s: 0.1, g: 0.05, q: 0.2, r: 0.05, m: 0.03, decay: { above: 1000, perThousand: 0.25 } },
  ),
  behaviourProfile(
    "prose",
    "answers in prose or a fenced block a third of the time when the output is not constrained, the JSON inside it",
    { p: 0.85, c: 0.3, s: 0.05, g: 0.03, q: 0.2, r: 0.05, m: 0.02, prose: 0.35 },
  ),
  behaviourProfile("lazy", "lazy: fixes at most one violation per answer, however many it is told", {
    p: 0.9,
    c: 0.3,
    s: 0.05,
    g: 0.03,
    q: 0.2,
    r: 0.05,
    m: 0.02,
    lazy: 1,
  }),
  behaviourProfile(
    "two-model",
    `two models: ${CHEAP_MODEL} (cheap, weaker) and ${CORRECTOR_MODEL} (strong, pricier); the peers call the strong one, redraft climbs the ladder [${CHEAP_MODEL}, ${CORRECTOR_MODEL} after 1]`,
    {
      p: 0.88,
      c: 0.3,
      s: 0.05,
      g: 0.03,
      q: 0.2,
      r: 0.05,
      m: 0.02,
      byModel: { [CHEAP_MODEL]: { p: 0.6, g: 0.08, r: 0.1, q: 0.4 } },
    },
    { cheap: CHEAP_MODEL, strong: CORRECTOR_MODEL },
  ),
];

const ProfileModule = z.object({
  name: z.string().min(1),
  summary: z.string(),
  ladder: z.object({ cheap: z.string().min(1), strong: z.string().min(1) }).optional(),
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
