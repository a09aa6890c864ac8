// The run page's source panel: the draft's grounded fields beside the source they were written
// from, each quote the check found highlighted where it occurs, and for a field the source does not
// support, the source near the closest match marked apart. Everything enters as text.
import type { GroundedField, RunDetail } from "../api-types.js";
import { type Child, fill, h } from "./dom.js";

/** A stretch of the source marked: quoted in support of a field, or the closest match to an unsupported one. */
interface Mark {
  start: number;
  end: number;
  kind: "supported" | "unsupported";
  path: string;
}

/** Non-overlapping marks over the source, in order: the first span to claim characters keeps them. */
function marks(fields: readonly GroundedField[], length: number): Mark[] {
  const spans: Mark[] = [];
  for (const f of fields) {
    for (const q of f.quotes) {
      if (q.problem || q.start === undefined || q.end === undefined) continue;
      spans.push({ start: q.start, end: q.end, kind: "supported", path: f.path });
    }
    const near = f.match ?? f.excerpt;
    if (f.status === "unsupported" && near) {
      spans.push({ start: near.start, end: near.end, kind: "unsupported", path: f.path });
    }
  }
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Mark[] = [];
  let at = 0;
  for (const s of spans) {
    const start = Math.max(s.start, at);
    const end = Math.min(s.end, length);
    if (end <= start) continue;
    kept.push({ ...s, start, end });
    at = end;
  }
  return kept;
}

/** The source text with its marks as <mark> elements, each labelled with the field it stands for. */
function sourceText(text: string, fields: readonly GroundedField[]): Child[] {
  const parts: Child[] = [];
  let at = 0;
  for (const m of marks(fields, text.length)) {
    if (m.start > at) parts.push(text.slice(at, m.start));
    parts.push(
      h(
        "mark",
        {
          className: m.kind,
          "data-path": m.path,
          title: `${m.path}: ${m.kind === "supported" ? "quoted in support" : "closest match; the source does not support the draft here"}`,
        },
        text.slice(m.start, m.end),
      ),
    );
    at = m.end;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

const PROBLEMS: Record<string, string> = {
  not_in_source: "does not occur in the source",
  quotes_draft: "quotes the draft, not the source",
  too_short: "too short to carry the claim",
};

function fieldItem(f: GroundedField, text: string): HTMLElement {
  const near = f.status === "unsupported" && f.match ? text.slice(f.match.start, f.match.end) : "";
  return h(
    "li",
    { className: `field ${f.status}`, "data-path": f.path },
    h("div", {}, h("code", {}, f.path), " ", h("span", { className: `grounding ${f.status}` }, f.status)),
    h("blockquote", { className: "draft-value" }, f.value),
    near ? h("p", { className: "source-near" }, "The source near it: ", h("q", {}, near)) : null,
    f.claim ? h("p", { className: "muted" }, `Claim: ${f.claim}`) : null,
    f.quotes.length
      ? h(
          "ul",
          { className: "quotes" },
          f.quotes.map((q) =>
            h(
              "li",
              { className: q.problem ? "bad" : "ok" },
              `“${q.text}” `,
              h(
                "span",
                { className: "muted" },
                q.problem ? `— ${PROBLEMS[q.problem] ?? q.problem}` : `— characters ${q.start}–${q.end}`,
              ),
            ),
          ),
        )
      : h("p", { className: "muted" }, "No quote from the source was given."),
  );
}

export function renderSource(el: HTMLElement, d: RunDetail): void {
  const s = d.source;
  if (!s) {
    fill(el);
    el.hidden = true;
    return;
  }
  el.hidden = false;
  const unsupported = s.fields.filter((f) => f.status === "unsupported").length;
  const seen = s.split
    ? `The judge saw passages ${s.passages.map((p) => `${p.id} (${p.start}–${p.end})`).join(", ")} of ${s.chars} characters.`
    : `The judge saw the whole source (${s.chars} characters).`;
  fill(
    el,
    h("h2", { id: "source-title" }, "Source and grounding"),
    h(
      "p",
      { className: "muted" },
      s.round
        ? `Judge round ${s.round}: ${unsupported} of ${s.fields.length} grounded field(s) not supported by the source. ${seen}`
        : "Not checked against the source yet.",
      s.truncated ? ` Only the first ${s.text.length} characters are shown.` : "",
    ),
    h(
      "div",
      { className: "cols source-cols" },
      h(
        "div",
        {},
        h("h3", {}, "Draft (grounded fields)"),
        s.fields.length
          ? h(
              "ul",
              { className: "grounded-fields" },
              s.fields.map((f) => fieldItem(f, s.text)),
            )
          : h("p", { className: "muted" }, "—"),
      ),
      h(
        "div",
        {},
        h("h3", {}, "Source"),
        h("pre", { className: "source-text" }, sourceText(s.text, s.fields)),
      ),
    ),
  );
}
