// Truncate, reset (archive the old generation) and delete the selected session, each
// after a confirmation, and the archives its resets left.

import { $, h } from "./dom.js";

/** Asks in the page's dialog; resolves to true when confirmed. */
export function confirmAction(message, action) {
  const dialog = $("confirm");
  $("confirm-message").textContent = message;
  $("confirm-ok").textContent = action;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

export async function renderArchives(page) {
  const list = $("archive-list");
  const key = page.current();
  if (!key) {
    list.replaceChildren();
    $("archive-count").textContent = "0";
    return [];
  }
  const archives = await page.spool().listArchives(page.workspace, key);
  if (key !== page.current()) return archives;
  $("archive-count").textContent = String(archives.length);
  list.replaceChildren(...archives.map((a) => h("li", { dataset: { sessionId: a.session_id, epoch: String(a.epoch) } },
    h("span", {}, `${a.session_id} · epoch ${a.epoch} · ${new Date(a.archived_at).toLocaleString()} · ${a.transcript_entries.length} entries`),
    h("details", {}, h("summary", {}, "Transcript"),
      h("ol", {}, a.transcript_entries.map((e) => h("li", {}, `${e.role}: ${e.content}`)))))));
  if (!archives.length) list.append(h("li", { class: "muted" }, "No resets yet."));
  return archives;
}

function report(text) {
  $("session-action-report").textContent = text;
}

export function wireSessionActions(page) {
  $("truncate").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = page.current();
    if (!key) return page.status("Select or create a session first.", "error");
    const keep = Number($("truncate-keep").value);
    return page.guarded(async () => {
      if (!(await confirmAction(`Keep only the newest ${keep} message(s) of ${key}? The others are deleted.`, "Truncate"))) return;
      const outcome = await page.spool().truncate(page.workspace, { key, max_messages: keep });
      report(outcome.truncated
        ? `Truncated: ${outcome.before_count} → ${outcome.after_count} messages.`
        : `Nothing to truncate (${outcome.before_count} messages).`);
      await page.refresh();
    });
  });

  $("reset-session").addEventListener("click", () => {
    const key = page.current();
    if (!key) return page.status("Select or create a session first.", "error");
    return page.guarded(async () => {
      if (!(await confirmAction(`Reset ${key}? Its transcript is archived and the key starts a new session.`, "Reset"))) return;
      const outcome = await page.spool().applyIntent(page.workspace, { key, intent: "reset_same_key" });
      const archive = outcome.archive;
      report(`Reset: now session ${outcome.session.session_id} (epoch ${outcome.session.epoch}); ` +
        (archive && archive.written ? "the old one is archived." : `archive not written${archive && archive.error ? `: ${archive.error}` : ""}.`));
      await page.refresh();
    });
  });

  $("delete-session").addEventListener("click", () => {
    const key = page.current();
    if (!key) return page.status("Select or create a session first.", "error");
    return page.guarded(async () => {
      if (!(await confirmAction(`Delete ${key} with its transcript, summaries and states? This cannot be undone.`, "Delete"))) {
        report("Delete cancelled.");
        return;
      }
      await page.spool().deleteSession(page.workspace, { key });
      report(`Deleted ${key}.`);
      await page.deselect();
    });
  });
}
