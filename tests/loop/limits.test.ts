import { afterEach, describe, expect, it, vi } from "vitest";
import type { Draft } from "../../shared/draft.js";
import { resolvePack } from "../../shared/engine.js";
import { mcqPack } from "../../shared/packs/mcq/mcq.js";

const draft = (options: Draft["options"]): Draft => ({ id: "d1", kind: "mcq", content: {}, options });

afterEach(() => {
  vi.restoreAllMocks();
});

describe("breakerThreshold, the deprecated name of breakerAfter", () => {
  // The warning is given once per process: each test takes the module afresh (the workers share
  // modules between files, vitest.config.ts).
  const freshLimits = async () => {
    vi.resetModules();
    return import("../../shared/loop/limits.js");
  };

  it("maps to breakerAfter, which wins when both are set, from a draft and from a pack", async () => {
    const { resolveLimits } = await freshLimits();
    vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    const resolved = resolvePack(mcqPack);
    expect(resolveLimits(resolved, draft({ breakerThreshold: 4 })).breakerAfter).toBe(4);
    expect(resolveLimits(resolved, draft({ breakerThreshold: 4, breakerAfter: 3 })).breakerAfter).toBe(3);
    const fromPack = resolvePack({ ...mcqPack, loop: { ...mcqPack.loop, breakerThreshold: 5 } });
    expect(resolveLimits(fromPack, draft(undefined)).breakerAfter).toBe(5);
  });

  it("warns once per process, as a DeprecationWarning with its own code", async () => {
    const { resolveLimits } = await freshLimits();
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    const resolved = resolvePack(mcqPack);
    resolveLimits(resolved, draft({ breakerAfter: 3 }));
    expect(warn).not.toHaveBeenCalled();
    resolveLimits(resolved, draft({ breakerThreshold: 3 }));
    resolveLimits(resolved, draft({ breakerThreshold: 3 }));
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]).toEqual([
      "breakerThreshold is deprecated: name it breakerAfter",
      { type: "DeprecationWarning", code: "REDRAFT_BREAKER_THRESHOLD" },
    ]);
  });
});
