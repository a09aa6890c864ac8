// The redraft viewer's entry: routes the address's hash to a view and polls it. Each view lives in
// its own module (runs.ts, run.ts, batch.ts…) and returns a View. Bundled into the page's one
// script, /app.js, by esbuild (ui/bundle.ts).
import { batchesView, batchView } from "./batch.js";
import { fill, setLive } from "./dom.js";
import { mermaid } from "./mermaid.js";
import { runView } from "./run.js";
import { runsView } from "./runs.js";
import type { View } from "./view.js";

const POLL_MS = 1000;
const main = document.getElementById("main") as HTMLElement;

type Route =
  | { name: "run"; id: string }
  | { name: "batch"; id: string }
  | { name: "batches" }
  | { name: "runs"; params: URLSearchParams };

let view: View = { refresh: async () => {}, stop: () => {} };
let timer: ReturnType<typeof setTimeout> | undefined;

/** `#/run/<id>`, `#/batches`, `#/batch/<id>`, else the runs list with its filters in the query. */
function parseRoute(): Route {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path = "/", query = ""] = hash.split("?");
  const run = /^\/run\/([A-Za-z0-9-]+)$/.exec(path)?.[1];
  if (run) return { name: "run", id: run };
  const batch = /^\/batch\/([A-Za-z0-9-]+)$/.exec(path)?.[1];
  if (batch) return { name: "batch", id: batch };
  if (path === "/batches") return { name: "batches" };
  return { name: "runs", params: new URLSearchParams(query) };
}

async function tick(): Promise<void> {
  try {
    await view.refresh();
    setLive(true);
  } catch (error) {
    setLive(false);
    console.warn(error);
  }
  timer = setTimeout(tick, POLL_MS);
}

function navigate(): void {
  clearTimeout(timer);
  view.stop();
  const route = parseRoute();
  fill(main);
  if (route.name === "run") view = runView(main, route.id);
  else if (route.name === "batch") view = batchView(main, route.id);
  else if (route.name === "batches") view = batchesView(main);
  else view = runsView(main, route.params);
  void tick();
}

window.addEventListener("hashchange", () => {
  navigate();
  main.focus();
});

mermaid().initialize({
  startOnLoad: false,
  securityLevel: "strict",
  theme: "default",
  // Tighter than Mermaid's 50 px between ranks: a run's path is a column of states, read at a glance.
  flowchart: {
    htmlLabels: false,
    useMaxWidth: false,
    rankSpacing: 24,
    nodeSpacing: 28,
    padding: 8,
    diagramPadding: 8,
  },
});
navigate();
