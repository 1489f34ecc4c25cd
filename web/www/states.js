// The Context states section: save a provider's context state for the selected session,
// list the session's states, invalidate them. Validity is the engine's.

import { $, h } from "./dom.js";

export async function renderStates(page) {
  const body = $("state-list").tBodies[0];
  const key = page.current();
  if (!key) return body.replaceChildren();
  const validOnly = !$("states-all").checked;
  const states = await page.spool().listStates(page.workspace, { key, valid_only: validOnly });
  if (key !== page.current()) return undefined;
  body.replaceChildren(...states.map((s) => h("tr", { dataset: { stateId: String(s.id), valid: String(s.valid) } },
    h("td", {}, String(s.id)),
    h("td", {}, s.provider),
    h("td", {}, s.state_kind),
    h("td", {}, `#${s.covered_through_id}`),
    h("td", {}, s.valid ? "valid" : `invalid: ${s.invalid_reason || ""}`),
    h("td", {}, h("details", {}, h("summary", {}, "payload"), h("pre", {}, JSON.stringify(s.payload, null, 2)))))));
  if (!states.length) body.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, validOnly ? "No valid states." : "No states.")));
  return states;
}

export function wireStates(page) {
  $("save-state").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!page.current()) return page.status("Select or create a session first.", "error");
    const data = new FormData(event.currentTarget);
    return page.guarded(async () => {
      const state = {
        provider: data.get("provider"),
        state_kind: data.get("state_kind"),
        payload: JSON.parse(String(data.get("payload") || "null")),
      };
      const saved = await page.spool().saveState(page.workspace, { key: page.current(), state });
      page.status(`Saved state #${saved.id} (${saved.state_kind}).`);
      await renderStates(page);
    });
  });
  $("invalidate-states").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!page.current()) return page.status("Select or create a session first.", "error");
    const data = new FormData(event.currentTarget);
    const kind = String(data.get("state_kind") || "").trim() || null;
    return page.guarded(async () => {
      const n = await page.spool().invalidateStates(page.workspace, { key: page.current(), reason: String(data.get("reason")), state_kind: kind });
      $("states-report").textContent = `Invalidated ${n} state(s).`;
      await renderStates(page);
    });
  });
  $("states-all").addEventListener("change", () => page.guarded(() => renderStates(page)));
}
