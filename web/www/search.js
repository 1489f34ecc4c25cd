// The Search section: full-text search across every session of the workspace
// (`spool.search`), a page of hits at a time; clicking a hit opens its session with the
// hit entry scrolled into view and highlighted. Ranking, snippets and what matches are
// the engine's.

import { $, h, describeError } from "./dom.js";

const LIMIT = 20;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let query = ""; // the query the shown hits answer
let cursor = null; // its next page

/**
 * The snippet's text with its highlights (byte ranges of the UTF-8 text) as `<mark>`:
 * the engine counts bytes, JavaScript strings count UTF-16 units, so the text is cut as
 * bytes (every range starts and ends on a character boundary).
 */
export function snippetNodes(snippet) {
  const bytes = encoder.encode(snippet.text);
  const piece = (from, to) => decoder.decode(bytes.subarray(from, to));
  const nodes = [];
  let at = 0;
  for (const [start, end] of snippet.highlights) {
    if (start < at || end > bytes.length || start >= end) continue; // not from Spool
    if (start > at) nodes.push(piece(at, start));
    nodes.push(h("mark", {}, piece(start, end)));
    at = end;
  }
  if (at < bytes.length) nodes.push(piece(at, bytes.length));
  return nodes;
}

function renderHit(page, hit) {
  return h("li", { dataset: { sessionKey: hit.session_key, entryId: String(hit.entry_id), role: hit.role } },
    h("button", {
      type: "button",
      class: "hit",
      "aria-label": `Open ${hit.session_key} at entry ${hit.entry_id}`,
      onclick: () => page.guarded(() => openHit(page, hit)),
    },
    h("span", { class: "hit-head" },
      h("span", { class: "key" }, hit.session_key),
      h("span", { class: "muted" }, ` #${hit.entry_id} · ${hit.role} · ${new Date(hit.created_at).toLocaleString()}`)),
    h("span", { class: "snippet", dataset: { field: hit.snippet.field } }, snippetNodes(hit.snippet))));
}

/** Runs the search (`more`: its next page, appended to the hits shown). */
async function run(page, more) {
  const list = $("search-hits");
  const report = $("text-search-report");
  const out = await page.spool().search(page.workspace, { query, limit: LIMIT, cursor: more ? cursor : null });
  cursor = out.next_cursor;
  if (!more) list.replaceChildren();
  list.append(...out.hits.map((hit) => renderHit(page, hit)));
  const shown = list.children.length;
  // A page may hold no hit and still have a next one (the candidates it checked failed a
  // phrase): "More hits" goes on.
  report.textContent = shown
    ? `${shown} hit(s)${cursor ? ", more may follow" : ""}.`
    : cursor ? "No hits yet; more candidates follow." : "No hits.";
  if (out.unindexed > 0) {
    // History from before the index: `indexBackfill` makes it searchable.
    report.textContent += ` ${out.unindexed} older entries were not searched yet (indexBackfill indexes them).`;
  }
  report.dataset.outcome = "ok";
  delete report.dataset.code;
  $("more-hits").hidden = !cursor;
  list.dataset.count = String(shown);
  list.dataset.runs = String(Number(list.dataset.runs || 0) + 1);
}

/** Selects the hit's session and brings the hit entry into view, highlighted. */
export async function openHit(page, hit) {
  await page.select(hit.session_key);
  const transcript = $("transcript");
  for (const el of transcript.querySelectorAll(".entry.search-hit")) {
    el.classList.remove("search-hit");
    el.removeAttribute("aria-current");
  }
  const entry = transcript.querySelector(`li.entry[data-entry-id="${hit.entry_id}"]`);
  transcript.dataset.hit = String(hit.entry_id);
  if (!entry) {
    // A compaction archived it: it is in the canonical transcript, not the active one.
    transcript.dataset.hitShown = "false";
    page.status(`Entry #${hit.entry_id} of ${hit.session_key} was compacted: it is in the canonical transcript.`);
    return;
  }
  transcript.dataset.hitShown = "true";
  entry.classList.add("search-hit");
  entry.setAttribute("aria-current", "true");
  for (const details of entry.querySelectorAll("details")) details.open = true;
  entry.scrollIntoView({ block: "center" });
  page.status(`Entry #${hit.entry_id} of ${hit.session_key}.`);
}

export function wireSearch(page) {
  const report = $("text-search-report");
  const failed = (error) => {
    report.textContent = describeError(error);
    report.dataset.outcome = "error";
    report.dataset.code = (error && error.code) || "unknown";
    $("search-hits").dataset.runs = String(Number($("search-hits").dataset.runs || 0) + 1);
  };
  $("text-search").addEventListener("submit", (event) => {
    event.preventDefault();
    query = $("text-search-query").value.trim();
    cursor = null;
    $("more-hits").hidden = true;
    $("search-hits").replaceChildren();
    run(page, false).catch(failed);
  });
  $("more-hits").addEventListener("click", () => run(page, true).catch(failed));
}
