/**
 * `npm start`: the main job on examples/drafts, through the local state machine. With
 * ANTHROPIC_API_KEY set, Claude corrects them; without it, the example cassette answers
 * (hand-written example answers, said so on screen).
 *
 * Plain JavaScript that hands over to bin/redraft.js, so it starts as fast as the command line
 * does (compiled in dist/, or through tsx when there is no current build).
 */

import "../bin/check-node.js";

// examples/pack-drafts/ needs the example packs loaded (--pack): the README shows that command.
const args = ["run", "examples/drafts/"];
if (!process.env.ANTHROPIC_API_KEY && !process.argv.includes("--llm")) {
  args.push("--llm", "replay:examples/example.cassette.json");
}
process.argv = [process.argv[0] ?? "node", "redraft", ...args, ...process.argv.slice(2)];
await import("../bin/redraft.js");
