import { InvalidArgumentError } from "commander";

/** A whole-number option from `min` to `max`; anything else is commander's invalid-argument error. */
export const wholeNumber =
  (min: number, max = Number.POSITIVE_INFINITY) =>
  (value: string): number => {
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!(n >= min && n <= max))
      throw new InvalidArgumentError(
        `It must be a whole number ${max === Number.POSITIVE_INFINITY ? `from ${min} up` : `from ${min} to ${max}`}.`,
      );
    return n;
  };

/** `--pack` once per file: repeatable, and never swallowing the command or paths after it. */
export const collect = (value: string, previous: string[] | undefined): string[] => [
  ...(previous ?? []),
  value,
];

/** Everything a person should read goes to stderr, so `--json` stdout holds only result lines. */
export const say = (text: string) => process.stderr.write(`${text}\n`);
