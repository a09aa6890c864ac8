// The review box of a run waiting for a person (or failed): approve, reject, or edit and resubmit,
// writing the same record as `redraft review`; the reason in plain words and what still fails.
import { fill, h, token } from "./dom.js";

export function renderReview(el, d, reload) {
  // The statuses `redraft review` accepts: a draft waiting for review, or a run that failed.
  if (d.run.status !== "needs_manual_review" && d.run.status !== "failed") {
    fill(el);
    return;
  }
  const message = h("div", { className: "message", role: "status", "aria-live": "polite" });
  const note = h("textarea", { id: "review-note", rows: 2, maxlength: 2000 });
  const editor = h("textarea", { id: "review-draft", rows: 14, spellcheck: "false" });
  editor.value = JSON.stringify(d.finalDraft, null, 2);
  const editBox = h(
    "div",
    { hidden: true },
    h("label", { for: "review-draft" }, "Edited draft (JSON)"),
    editor,
    h(
      "div",
      { className: "actions" },
      h(
        "button",
        { type: "button", className: "primary", onclick: () => send("edit") },
        "Resubmit edited draft",
      ),
    ),
  );
  async function send(decision) {
    message.className = "message";
    message.textContent = "Sending…";
    try {
      const res = await fetch(`/api/runs/${d.run.runId}/review`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-redraft-token": token },
        body: JSON.stringify({
          decision,
          ...(note.value.trim() && { note: note.value.trim() }),
          ...(decision === "edit" && { draft: editor.value }),
        }),
      });
      const body = await res.json();
      if (!res.ok) throw new Error(body.error);
      message.textContent = body.message;
      await reload();
    } catch (error) {
      message.className = "message error";
      message.textContent = error.message;
    }
  }
  fill(
    el,
    h(
      "div",
      { className: "review" },
      h("h2", {}, "Review"),
      h(
        "p",
        {},
        d.run.status === "failed"
          ? "This run failed; a person can still approve, reject or edit its best draft. The page writes the same record as "
          : "This draft needs a person's decision. The page writes the same record as ",
        h("code", {}, "redraft review"),
        ".",
      ),
      d.reasonExplained
        ? h("p", { className: "reason" }, h("b", {}, `${d.run.reason}: `), d.reasonExplained)
        : null,
      d.finalViolations.length
        ? h(
            "ul",
            { className: "remaining", "aria-label": "Violations that remain" },
            d.finalViolations.map((v) =>
              h(
                "li",
                {},
                h("code", {}, v.ruleId),
                ` ${v.severity}${v.path ? ` at ${v.path}` : ""}: ${v.message}`,
              ),
            ),
          )
        : null,
      h("label", { for: "review-note" }, "Note (why)"),
      note,
      h(
        "div",
        { className: "actions" },
        h("button", { type: "button", className: "primary", onclick: () => send("approve") }, "Approve"),
        h("button", { type: "button", className: "danger", onclick: () => send("reject") }, "Reject"),
        h(
          "button",
          {
            type: "button",
            "aria-expanded": "false",
            onclick: (e) => {
              editBox.hidden = !editBox.hidden;
              e.currentTarget.setAttribute("aria-expanded", String(!editBox.hidden));
              if (!editBox.hidden) editor.focus();
            },
          },
          "Edit and resubmit…",
        ),
      ),
      editBox,
      message,
    ),
  );
}
