// The redraft viewer's entry: routes the address's hash to a view and polls it. Each view lives in
// its own module (runs.js, run.js, batch.js…) and returns { refresh, stop }.
/* global mermaid */
import { batchesView, batchView } from "./batch.js";
import { fill, setLive } from "./dom.js";
import { runView } from "./run.js";
import { runsView } from "./runs.js";

const POLL_MS = 1000;
const main = document.getElementById("main");

let view = { refresh: async () => {}, stop: () => {} };
let timer;

/** `#/run/<id>`, `#/batches`, `#/batch/<id>`, else the runs list with its filters in the query. */
function parseRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = hash.split("?");
  const run = /^\/run\/([A-Za-z0-9-]+)$/.exec(path);
  if (run) return { name: "run", id: run[1] };
  const batch = /^\/batch\/([A-Za-z0-9-]+)$/.exec(path);
  if (batch) return { name: "batch", id: batch[1] };
  if (path === "/batches") return { name: "batches" };
  return { name: "runs", params: new URLSearchParams(query) };
}

async function tick() {
  try {
    await view.refresh();
    setLive(true);
  } catch (error) {
    setLive(false);
    console.warn(error);
  }
  timer = setTimeout(tick, POLL_MS);
}

function navigate() {
  clearTimeout(timer);
  view.stop();
  const route = parseRoute();
  fill(main);
  if (route.name === "run") view = runView(main, route.id);
  else if (route.name === "batch") view = batchView(main, route.id);
  else if (route.name === "batches") view = batchesView(main);
  else view = runsView(main, route.params);
  tick();
}

window.addEventListener("hashchange", () => {
  navigate();
  main.focus();
});

mermaid.initialize({
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
