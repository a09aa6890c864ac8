import { type ResolvedPack, resolvePack } from "./engine.js";
import { InvalidPackError, UnknownKindError } from "./errors.js";
import { type AnyPack, type DeploymentConfig, DeploymentConfigSchema } from "./pack.js";
import { checkPackShape } from "./pack-check.js";
import { builtinPacks } from "./packs/index.js";

/**
 * The packs a deployment knows, by kind, with the deployment's overrides applied.
 * Resolved packs are built once per kind and cached: validation is a hot path.
 */
export class PackRegistry {
  readonly #packs = new Map<string, AnyPack>();
  readonly #resolved = new Map<string, ResolvedPack>();
  readonly #config: DeploymentConfig;

  constructor(config: DeploymentConfig = {}, packs: readonly AnyPack[] = builtinPacks) {
    const parsed = DeploymentConfigSchema.safeParse(config);
    if (!parsed.success) throw new InvalidPackError(`deployment config is invalid: ${parsed.error.message}`);
    this.#config = parsed.data;
    for (const pack of packs) this.register(pack);
  }

  get config(): DeploymentConfig {
    return this.#config;
  }

  /** Adds a kind, or replaces a built-in one with a user's own pack of the same kind. */
  register(pack: AnyPack): this {
    // Its shape first (a severity "eror", no rules, a check that is no function), naming pack and rule.
    checkPackShape(pack);
    this.#packs.set(pack.kind, pack);
    this.#resolved.delete(pack.kind);
    // Resolve eagerly so that a bad override fails at registration, not on the first draft.
    this.get(pack.kind);
    return this;
  }

  kinds(): string[] {
    return [...this.#packs.keys()].sort();
  }

  has(kind: string): boolean {
    return this.#packs.has(kind);
  }

  get(kind: string): ResolvedPack {
    const cached = this.#resolved.get(kind);
    if (cached) return cached;
    const pack = this.#packs.get(kind);
    if (!pack) throw new UnknownKindError(kind, this.kinds());
    const resolved = resolvePack(pack, this.#config.packs?.[kind], this.#config);
    this.#resolved.set(kind, resolved as ResolvedPack);
    return resolved as ResolvedPack;
  }
}

let defaultRegistry: PackRegistry | undefined;

/** The registry of built-in packs with no overrides, built on first use. */
export function getDefaultRegistry(): PackRegistry {
  defaultRegistry ??= new PackRegistry();
  return defaultRegistry;
}
