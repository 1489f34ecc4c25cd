// The Turns section: start a turn of the selected session, settle or interrupt it, and
// every turn of the session with its phase, as the engine lists them (`listTurns`, newest
// first, a page at a time).

import { $, h } from "./dom.js";

/** Turns per `listTurns` page; `window.spoolDemo.turnPaging` lets a test shrink it. */
export const turnPaging = { size: 50 };

// How many pages of the selected session's turns are shown ("More" adds one).
let pagedKey = null;
let pages = 1;

/**
 * The turns to show for `key`: the first `pages` pages of `listTurns`, newest first, each
 * continued by the previous page's cursor; the running one from `sessionTurns`.
 */
async function loadTurns(page, key) {
  const spool = page.spool();
  if (key !== pagedKey) {
    pagedKey = key;
    pages = 1;
  }
  const turns = [];
  let cursor = null;
  for (let read = 0; read < pages; read++) {
    const found = await spool.listTurns(page.workspace, { key, request: { order: "newest_first", limit: turnPaging.size, cursor } });
    turns.push(...found.turns);
    cursor = found.next_cursor;
    if (!cursor) break;
  }
  const { latest, active } = await spool.sessionTurns(page.workspace, { key });
  return { latest, active, turns, more: cursor !== null };
}

/** Redraws the section for the selected session; returns the turns shown. */
export async function renderTurns(page) {
  const body = $("turn-list").tBodies[0];
  const more = $("more-turns");
  const key = page.current();
  if (!key) {
    body.replaceChildren();
    more.hidden = true;
    $("active-turn").textContent = "Select a session.";
    return [];
  }
  const { latest, active, turns, more: hasMore } = await loadTurns(page, key);
  if (key !== page.current()) return turns; // the selection moved on meanwhile
  $("active-turn").textContent = active ? `Running: ${active.turn_id}` : "No turn running.";
  $("active-turn").dataset.active = active ? active.turn_id : "";
  // Appends made while a turn runs carry its id (the form shows it and it can be changed).
  $("append-turn").value = active ? active.turn_id : "";
  $("turn-id").placeholder = `turn-${latest ? latest.seq + 1 : 1}`;
  body.replaceChildren(...turns.map((turn) => h("tr", { dataset: { turnId: turn.turn_id, phase: turn.phase } },
    h("td", {}, turn.turn_id),
    h("td", {}, String(turn.seq)),
    h("td", { class: `phase phase-${turn.phase}` }, turn.phase),
    h("td", {}, turn.boundary ? `#${turn.boundary.entry_id}` : "—"),
    h("td", {}, turn.provider_turn_id ?? "—"),
    h("td", {}, turn.phase === "running"
      ? h("span", { class: "row" },
        h("button", { type: "button", class: "settle", "aria-label": `Settle turn ${turn.turn_id}`, onclick: () => close(page, turn.turn_id, "settleTurn") }, "Settle"),
        h("button", { type: "button", class: "interrupt secondary", "aria-label": `Interrupt turn ${turn.turn_id}`, onclick: () => close(page, turn.turn_id, "interruptTurn") }, "Interrupt"))
      : ""))));
  if (!turns.length) body.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No turns yet.")));
  more.hidden = !hasMore;
  return turns;
}

function close(page, turnId, method) {
  return page.guarded(async () => {
    const turn = await page.spool()[method](page.workspace, { key: page.current(), turn_id: turnId });
    page.status(`Turn ${turn.turn_id} is ${turn.phase}.`);
    await page.refresh();
  });
}

/** Wires the start form and the "More" button. */
export function wireTurns(page) {
  $("more-turns").addEventListener("click", () => page.guarded(async () => {
    pages += 1;
    await page.refresh();
  }));
  $("start-turn").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!page.current()) return page.status("Select or create a session first.", "error");
    const input = $("turn-id");
    const request = { turn_id: input.value.trim() || input.placeholder };
    const providerTurn = $("provider-turn-id").value.trim();
    if (providerTurn) request.provider_turn_id = providerTurn;
    return page.guarded(async () => {
      const turn = await page.spool().startTurn(page.workspace, { key: page.current(), request });
      input.value = "";
      $("provider-turn-id").value = "";
      page.status(`Turn ${turn.turn_id} started (#${turn.seq}).`);
      await page.refresh();
    });
  });
}
