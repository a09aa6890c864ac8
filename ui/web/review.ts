// The review box of a run waiting for a person (or failed): approve, reject, or edit and resubmit,
// writing the same record as `redraft review`; the reason in plain words and what still fails.
// Approve and Reject ask first, naming the draft and the decision; approving a draft whose errors
// remain needs the box ticked that says so; a decision may be taken back for a while (Undo).
import type { ApiError, ReviewAnswer, RunDetail, UndoAnswer } from "../api-types.js";
import { fill, h, listen, token } from "./dom.js";

type Decision = "approve" | "reject" | "edit";

/** A review or an undo, sent with the page's token; a refusal's `error` becomes the thrown message. */
async function post<T extends ReviewAnswer | UndoAnswer>(path: string, body: object): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-redraft-token": token },
    body: JSON.stringify(body),
  });
  const answer: unknown = await res.json();
  if (!res.ok) throw new Error((answer as ApiError).error);
  return answer as T;
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

const clock = (iso: string) => new Date(iso).toLocaleTimeString();

/** A decided run whose reviewer may still take the decision back: what was decided, and Undo. */
function renderUndo(
  el: HTMLElement,
  d: RunDetail,
  review: NonNullable<RunDetail["run"]["review"]>,
  undoUntil: string,
  reload: () => Promise<void>,
): void {
  const message = h("div", { className: "message", role: "status", "aria-live": "polite" });
  const what = review.decision === "approve" ? "approval" : "rejection";
  const box = h(
    "div",
    { className: "review undo" },
    h("h2", {}, "Review"),
    h(
      "p",
      {},
      `${review.reviewer ?? "A reviewer"}'s ${what} of draft ${d.run.draftId} can be taken back by them until ${clock(undoUntil)}.`,
    ),
    h(
      "div",
      { className: "actions" },
      h(
        "button",
        {
          type: "button",
          onclick: async () => {
            message.className = "message";
            message.textContent = "Sending…";
            try {
              message.textContent = (await post<UndoAnswer>(`/api/runs/${d.run.runId}/undo`, {})).message;
              await reload();
            } catch (error) {
              message.className = "message error";
              message.textContent = errorText(error);
            }
          },
        },
        `Undo ${what}`,
      ),
    ),
    message,
  );
  fill(el, box);
  // Past the deadline the server refuses: the button goes when the time is up.
  const left = Date.parse(undoUntil) - Date.now();
  setTimeout(() => box.isConnected && fill(el), Math.max(0, left));
}

export function renderReview(el: HTMLElement, d: RunDetail, reload: () => Promise<void>): void {
  if (d.undoUntil && d.run.review) {
    renderUndo(el, d, d.run.review, d.undoUntil, reload);
    return;
  }
  // The statuses `redraft review` accepts: a draft waiting for review, or a run that failed.
  if (d.run.status !== "needs_manual_review" && d.run.status !== "failed") {
    fill(el);
    return;
  }
  const message = h("div", { className: "message", role: "status", "aria-live": "polite" });
  const note = h("textarea", { id: "review-note", rows: 2, maxlength: 2000 });
  const editor = h("textarea", { id: "review-draft", rows: 14, spellcheck: "false" });
  editor.value = JSON.stringify(d.finalDraft, null, 2);
  const errors = [...new Set(d.finalViolations.filter((v) => v.severity === "error").map((v) => v.ruleId))];
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
        { type: "button", className: "primary", onclick: () => void send("edit") },
        "Resubmit edited draft",
      ),
    ),
  );
  async function send(decision: Decision, override = false): Promise<void> {
    message.className = "message";
    message.textContent = "Sending…";
    try {
      const body = await post<ReviewAnswer>(`/api/runs/${d.run.runId}/review`, {
        decision,
        ...(note.value.trim() && { note: note.value.trim() }),
        ...(decision === "edit" && { draft: editor.value }),
        ...(override && { override: true }),
      });
      message.textContent = body.message;
      await reload();
    } catch (error) {
      message.className = "message error";
      message.textContent = errorText(error);
    }
  }

  /** Asks before a decision: the draft, the decision and what it does; an approval over errors needs the box ticked. */
  function confirm(decision: "approve" | "reject"): void {
    const approving = decision === "approve";
    const needsOverride = approving && errors.length > 0;
    const override = h("input", { type: "checkbox", id: "review-override" });
    const go = h(
      "button",
      { type: "button", className: approving ? "primary" : "danger", disabled: needsOverride },
      approving ? "Approve" : "Reject",
    );
    const dialog = h(
      "dialog",
      { className: "confirm", "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, `${approving ? "Approve" : "Reject"} draft ${d.run.draftId}?`),
      h(
        "p",
        {},
        approving
          ? `Run ${d.run.runId} becomes validated: its draft goes out as it is.`
          : `Run ${d.run.runId} is closed: its draft is rejected.`,
        " You can take the decision back for a few minutes.",
      ),
      needsOverride
        ? h(
            "label",
            { className: "override" },
            override,
            ` Approve although ${errors.length} error violation${errors.length === 1 ? "" : "s"} remain (${errors.join(", ")})`,
          )
        : null,
      h(
        "div",
        { className: "actions" },
        go,
        h("button", { type: "button", onclick: () => dialog.close() }, "Cancel"),
      ),
    );
    override.addEventListener("change", () => {
      go.disabled = !override.checked;
    });
    go.addEventListener("click", () => {
      dialog.close();
      void send(decision, needsOverride && override.checked);
    });
    dialog.addEventListener("close", () => dialog.remove());
    document.body.append(dialog);
    dialog.showModal();
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
        h("button", { type: "button", className: "primary", onclick: () => confirm("approve") }, "Approve…"),
        h("button", { type: "button", className: "danger", onclick: () => confirm("reject") }, "Reject…"),
        h(
          "button",
          {
            type: "button",
            "aria-expanded": "false",
            onclick: listen<HTMLButtonElement>((e) => {
              editBox.hidden = !editBox.hidden;
              e.currentTarget.setAttribute("aria-expanded", String(!editBox.hidden));
              if (!editBox.hidden) editor.focus();
            }),
          },
          "Edit and resubmit…",
        ),
      ),
      editBox,
      message,
    ),
  );
}
