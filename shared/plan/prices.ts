import * as z from "zod";

/**
 * The published prices and quotas the plan uses (shared/plan/data/prices.json): each number with
 * the page it was read on, the date, and whether it was read on the provider's own page.
 */
const PriceItemSchema = z
  .object({
    description: z.string(),
    unit: z.string(),
    /** By Region code; `global` for a provider without Regions. */
    values: z.record(z.string(), z.number().nonnegative()),
    source: z.url(),
    read: z.iso.date(),
    /** `unconfirmed`: not read on the provider's own page, or not in the text read; the plan says so. */
    status: z.enum(["confirmed", "unconfirmed"]),
    note: z.string().optional(),
  })
  .strict()
  .refine((item) => "us-east-1" in item.values || "global" in item.values, {
    message: "every item has a us-east-1 (or global) value, the default",
  });
type PriceItem = z.infer<typeof PriceItemSchema>;

export const PricesFileSchema = z
  .object({ note: z.string(), items: z.record(z.string(), PriceItemSchema) })
  .strict();
export type PricesFile = z.infer<typeof PricesFileSchema>;

/** One number as the plan used it: which item, which Region's row, and how sure it is. */
export interface UsedNumber {
  id: string;
  value: number;
  unit: string;
  /** The Region whose row was used: the one asked for, `us-east-1` when it has none, or `global`. */
  region: string;
  /** True when the Region asked for had no row and us-east-1's was used. */
  fallback: boolean;
  status: PriceItem["status"];
  source: string;
  read: string;
}

/** Looks numbers up for one Region and remembers each one used, for the plan to list. */
export class PriceBook {
  readonly used = new Map<string, UsedNumber>();
  constructor(
    readonly file: PricesFile,
    readonly region: string,
  ) {}

  get(id: string): number {
    const item = this.file.items[id];
    if (!item) throw new Error(`prices.json has no item "${id}"`);
    const region =
      item.values[this.region] !== undefined ? this.region : "global" in item.values ? "global" : "us-east-1";
    const value = item.values[region] as number;
    this.used.set(id, {
      id,
      value,
      unit: item.unit,
      region,
      fallback: region === "us-east-1" && this.region !== "us-east-1",
      status: item.status,
      source: item.source,
      read: item.read,
    });
    return value;
  }
}
