import type { Pack } from "../../shared/pack.js";

/** Content of a `haiku` draft. */
export interface Haiku {
  lines: string[];
}

/** Vowel groups: a rough syllable count, enough for a worked example. */
const syllables = (line: string) => (line.toLowerCase().match(/[aeiouy]+/g) ?? []).length;

/**
 * A worked example of a kind added as a TypeScript module: export a Pack, then register it
 * (`new PackRegistry(config, [...builtinPacks, haikuPack])`, or `redraft run … --pack examples/packs/haiku.ts`).
 */
export const haikuPack: Pack<Haiku, { syllables: number[] }> = {
  kind: "haiku",
  description: "Three-line poems of 5, 7 and 5 syllables",
  settings: { syllables: [5, 7, 5] },
  instructions: "A haiku has exactly three lines of 5, 7 and 5 syllables.",
  rules: [
    {
      id: "haiku_three_lines",
      description: "A haiku has three lines",
      severity: "error",
      check: ({ content }) =>
        content.lines.length === 3
          ? []
          : [
              {
                message: `has ${content.lines.length} lines`,
                path: "/lines",
                suggestion: "Write exactly three lines.",
              },
            ],
    },
    {
      id: "haiku_syllables",
      description: "Lines of 5, 7 and 5 syllables",
      severity: "warning",
      check: ({ content, settings }) =>
        content.lines.flatMap((line, i) => {
          const want = settings.syllables[i];
          const got = syllables(line);
          return want === undefined || got === want
            ? []
            : [
                {
                  message: `line ${i + 1} has about ${got} syllables, not ${want}`,
                  path: `/lines/${i}`,
                  suggestion: `Rewrite line ${i + 1} with ${want} syllables.`,
                },
              ];
        }),
    },
  ],
};
