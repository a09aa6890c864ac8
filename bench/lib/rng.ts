/** Small deterministic helpers for the benchmarks: a seeded PRNG and keyed uniform draws. */

/** mulberry32: a 32-bit seeded PRNG, good enough for reproducible test corpora (not for cryptography). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a over a string: turns a key such as `draft-7|attempt-2|fix|/stem` into a 32-bit seed. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A PRNG seeded by a list of key parts: the same parts always give the same stream. */
export function keyedRng(...parts: (string | number)[]): () => number {
  return mulberry32(hash32(parts.join("|")));
}

/** One uniform draw in [0,1) for a key: the same key always draws the same number. */
export function keyedUniform(...parts: (string | number)[]): number {
  return keyedRng(...parts)();
}

export class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(min: number, maxInclusive: number): number {
    return min + Math.floor(this.next() * (maxInclusive - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(this.next() * items.length)] as T;
  }
  /** k distinct items, in random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < k && pool.length > 0)
      out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0] as T);
    return out;
  }
  shuffle<T>(items: readonly T[]): T[] {
    return this.sample(items, items.length);
  }
}
