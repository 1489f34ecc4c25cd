// The Turns section: start a turn of the selected session, settle or interrupt it, and
// the session's turns with their phase, as the engine records them.

import { $, h } from "./dom.js";

/**
 * The turns to show for `key`. The engine has no "list turns" call, so the page asks it
 * for the turns it can name — those the transcript's entries carry (`turn_id`), the
 * latest and the active one (`sessionTurns`) — and shows each as `getTurn` returns it.
 */
async function knownTurns(page, key, entries) {
  const spool = page.spool();
  const { latest, active } = await spool.sessionTurns(page.workspace, key);
  const ids = new Set(entries.map((e) => e.turn_id).filter(Boolean));
  for (const turn of [latest, active]) if (turn) ids.add(turn.turn_id);
  const turns = await Promise.all([...ids].map((id) => spool.getTurn(page.workspace, key, id)));
  return { active, turns: turns.filter(Boolean).sort((a, b) => a.seq - b.seq) };
}

/** Redraws the section for the selected session; returns the turns shown. */
export async function renderTurns(page, entries) {
  const body = $("turn-list").tBodies[0];
  const key = page.current();
  if (!key) {
    body.replaceChildren();
    $("active-turn").textContent = "Select a session.";
    return [];
  }
  const { active, turns } = await knownTurns(page, key, entries);
  if (key !== page.current()) return turns; // the selection moved on meanwhile
  $("active-turn").textContent = active ? `Running: ${active.turn_id}` : "No turn running.";
  $("active-turn").dataset.active = active ? active.turn_id : "";
  // Appends made while a turn runs carry its id (the form shows it and it can be changed).
  $("append-turn").value = active ? active.turn_id : "";
  const next = turns.length ? turns[turns.length - 1].seq + 1 : 1;
  $("turn-id").placeholder = `turn-${next}`;
  body.replaceChildren(...turns.map((turn) => h("tr", { dataset: { turnId: turn.turn_id, phase: turn.phase } },
    h("td", {}, turn.turn_id),
    h("td", {}, String(turn.seq)),
    h("td", { class: `phase phase-${turn.phase}` }, turn.phase),
    h("td", {}, turn.boundary ? `#${turn.boundary.entry_id}` : "—"),
    h("td", {}, turn.phase === "running"
      ? h("span", { class: "row" },
        h("button", { type: "button", class: "settle", "aria-label": `Settle turn ${turn.turn_id}`, onclick: () => close(page, turn.turn_id, "settleTurn") }, "Settle"),
        h("button", { type: "button", class: "interrupt secondary", "aria-label": `Interrupt turn ${turn.turn_id}`, onclick: () => close(page, turn.turn_id, "interruptTurn") }, "Interrupt"))
      : ""))));
  if (!turns.length) body.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No turns yet.")));
  return turns;
}

function close(page, turnId, method) {
  return page.guarded(async () => {
    const turn = await page.spool()[method](page.workspace, page.current(), turnId);
    page.status(`Turn ${turn.turn_id} is ${turn.phase}.`);
    await page.refresh();
  });
}

/** Wires the start form. */
export function wireTurns(page) {
  $("start-turn").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!page.current()) return page.status("Select or create a session first.", "error");
    const input = $("turn-id");
    const request = { turn_id: input.value.trim() || input.placeholder };
    const providerTurn = $("provider-turn-id").value.trim();
    if (providerTurn) request.provider_turn_id = providerTurn;
    return page.guarded(async () => {
      const turn = await page.spool().startTurn(page.workspace, page.current(), request);
      input.value = "";
      $("provider-turn-id").value = "";
      page.status(`Turn ${turn.turn_id} started (#${turn.seq}).`);
      await page.refresh();
    });
  });
}
