#!/usr/bin/env node
// The `redraft` command. In a checkout this workspace holds no code of its own: npm links this file
// into node_modules/.bin, so `npx redraft` runs the repository's bin/redraft.js directly (compiled
// dist/ when current, else the sources through tsx; never a rebuild, never an install). The
// published @redraft/cli replaces this file with that bin and ships dist/ beside it (scripts/pack.ts).
await import("../../../bin/redraft.js");
