import type { ModelRequest, TokenUsage } from "../../shared/model/types.js";
import { hash32 } from "./rng.js";

/**
 * A prompt as the provider lays it out (tools, then system, then messages), cut into segments; a
 * segment with `breakpoint` ends a prefix the caller asked to cache (Anthropic's `cache_control`).
 */
export interface PromptSegment {
  text: string;
  breakpoint?: boolean;
}

/** Characters per token, the same crude rate for every policy. */
const CHARS_PER_TOKEN = 4;
/** Below this many tokens a prefix is not cached (Anthropic's minimum for Sonnet models). */
export const MIN_CACHEABLE_TOKENS = 1024;

const tokensOf = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN);

/**
 * The provider's prompt cache, shared by every call of one policy run (drafts run one after another,
 * well inside the 5-minute lifetime): a call reads the longest of its breakpoint prefixes that an
 * earlier call wrote, writes its later breakpoint prefixes, and pays plain input for the rest.
 */
export class PromptCache {
  readonly #written = new Set<string>();

  usage(segments: readonly PromptSegment[], outputChars: number): TokenUsage {
    const total = segments.reduce((s, x) => s + x.text.length, 0);
    const prefixes: { chars: number; key: string }[] = [];
    let text = "";
    for (const s of segments) {
      text += s.text;
      if (s.breakpoint && tokensOf(text.length) >= MIN_CACHEABLE_TOKENS) {
        prefixes.push({ chars: text.length, key: `${text.length}:${hash32(text)}` });
      }
    }
    let read = 0;
    for (const p of prefixes) if (this.#written.has(p.key)) read = p.chars;
    const last = prefixes.at(-1)?.chars ?? 0;
    const write = Math.max(0, last - read);
    for (const p of prefixes) this.#written.add(p.key);
    return {
      input: tokensOf(total - read - write),
      output: tokensOf(outputChars),
      cacheRead: tokensOf(read),
      cacheWrite: tokensOf(write),
    };
  }
}

/** redraft's request as the Messages API lays it out: the tool and the system blocks up to the one marked `cache`, then the rest. */
export function redraftSegments(request: ModelRequest): PromptSegment[] {
  const lastCached = request.system.findLastIndex((b) => b.cache === true);
  const head = [JSON.stringify(request.tool), ...request.system.slice(0, lastCached + 1).map((b) => b.text)];
  const tail = [...request.system.slice(lastCached + 1).map((b) => b.text), request.user];
  return [{ text: head.join("\n"), breakpoint: lastCached >= 0 }, { text: tail.join("\n") }];
}
