// Spool's demo agent UI: every button calls the `Spool` JS API and shows what the core
// answered. No session rule lives here — ordering, accounting, coverage, lineage and
// resume decisions all come from the engine.

import init, { Spool, spoolCalls } from "../pkg/spool_web.js";
import { $, h, describeError } from "./dom.js";
import { detectFormat } from "./import-format.js";
import { loadDeclarations, renderOperations, updatePrefills } from "./operations.js";
import { offerTurns, wireProviderFork } from "./provider-fork.js";
import { renderArchives, wireSessionActions } from "./session-actions.js";
import { openHit, wireSearch } from "./search.js";
import { renderStates, wireStates } from "./states.js";
import { renderTurns, turnPaging, wireTurns } from "./turns.js";

const params = new URLSearchParams(location.search);
const WORKSPACE = params.get("ws") || "default";
const DB_NAME = params.get("db") || "spool-demo";
const PAGE = 500;

let spool;
let current = null; // the selected session key
let allSessions = [];
let renderGeneration = 0; // only the newest transcript render may touch the page
let operations = null; // the Operations panel's rows

// ---------------------------------------------------------------- helpers

function status(text, kind = "info") {
  const el = $("status");
  el.textContent = text;
  el.dataset.kind = kind;
}

function showError(error) {
  status(describeError(error), "error");
  console.error(error);
}

/** Runs a UI action, showing its failure instead of throwing it. */
async function guarded(action) {
  try {
    return await action();
  } catch (error) {
    showError(error);
    return undefined;
  }
}

const has = (method) => spool && typeof spool[method] === "function";
const when = (ms) => new Date(ms).toLocaleString();


// ---------------------------------------------------------------- sessions

async function refreshSessions() {
  const sessions = [];
  let cursor = null;
  do {
    const page = await spool.listSessions(WORKSPACE, { limit: 200, cursor });
    sessions.push(...page.sessions);
    cursor = page.next_cursor;
  } while (cursor && sessions.length < 2000);
  allSessions = sessions; // most recently updated first, as the engine lists them
  renderSessions();
}

function renderSessions() {
  const needle = $("search").value.trim().toLowerCase();
  const list = $("session-list");
  const shown = allSessions.filter((s) => !needle || s.key.toLowerCase().includes(needle));
  list.replaceChildren(
    ...shown.map((s) =>
      h("li", { dataset: { key: s.key } },
        h("button", {
          type: "button",
          class: s.key === current ? "session selected" : "session",
          "aria-current": s.key === current ? "true" : null,
          onclick: () => select(s.key),
        },
        h("span", { class: "key" }, s.key),
        h("span", { class: "muted" }, `${s.entry_count} msgs · ${s.total_tokens} tok · ${when(s.updated_at)}`))),
    ),
  );
  if (shown.length === 0) list.append(h("li", { class: "muted" }, needle ? "No match." : "No sessions yet."));
}

async function select(key) {
  if (key !== current) {
    // Reports about the previous session.
    $("compact-report").replaceChildren();
    $("session-action-report").textContent = "";
    $("states-report").textContent = "";
  }
  current = key;
  if (location.hash !== `#${encodeURIComponent(key)}`) {
    history.replaceState(null, "", `#${encodeURIComponent(key)}`);
  }
  renderSessions();
  if (operations) updatePrefills(operations.rows, panelContext);
  updateExecutePrefill();
  await renderCurrent();
}

/** Everything shown about the selected session, as the engine has it now. */
async function renderCurrent() {
  // Turns and states belong to a live session: a deleted one shows none.
  const live = current ? await spool.getSession(WORKSPACE, { key: current }) : null;
  const shown = live ? page : { ...page, current: () => null };
  await Promise.all([renderSession(), renderLineage(), renderArchives(page), renderStates(shown)]);
  offerTurns(await renderTurns(shown), live ? current : null);
}

/** After a write: the session list and the selected session. */
async function refreshAll() {
  await refreshSessions();
  await renderCurrent();
}

/** The selected session is gone (deleted): show nothing selected. */
async function deselect() {
  current = null;
  history.replaceState(null, "", location.pathname + location.search);
  await refreshAll();
}

async function createSession(key) {
  await spool.createSession(WORKSPACE, { key });
  status(`Created ${key}.`);
  await refreshSessions();
  await select(key);
}

// ---------------------------------------------------------------- transcript

async function readAll(key) {
  const entries = [];
  let cursor = null;
  do {
    const page = await spool.readPage(WORKSPACE, { key, request: { order: "oldest_first", cursor, limit: PAGE } });
    entries.push(...page.entries);
    cursor = page.next_cursor;
  } while (cursor);
  return entries;
}

async function renderSession() {
  const title = $("session-title");
  const transcript = $("transcript");
  const usage = $("session-usage");
  if (!current) {
    title.textContent = "No session selected";
    transcript.replaceChildren();
    transcript.dataset.count = "0";
    usage.replaceChildren();
    return;
  }
  const generation = ++renderGeneration;
  const session = await spool.getSession(WORKSPACE, { key: current });
  if (generation !== renderGeneration) return;
  if (!session) {
    title.textContent = `${current} (not found)`;
    transcript.replaceChildren();
    transcript.dataset.count = "0";
    usage.replaceChildren();
    return;
  }
  const entries = await readAll(current);
  if (generation !== renderGeneration) return;
  title.textContent = session.key;
  usage.replaceChildren(
    ...[
      ["messages", session.entry_count],
      ["tokens", session.total_tokens],
      ["input", session.input_tokens],
      ["output", session.output_tokens],
      ["compactions", session.compaction_count],
      ["epoch", session.epoch],
      ["status", session.status],
    ].flatMap(([name, value]) => [h("dt", {}, name), h("dd", { dataset: { field: name } }, String(value))]),
  );
  transcript.dataset.count = String(entries.length);
  transcript.replaceChildren(...entries.map(renderEntry));
}

function renderEntry(entry) {
  const body = [];
  if (entry.role === "tool") {
    body.push(h("details", { class: "tool-result" },
      h("summary", {}, `Tool result${entry.tool_call_id ? ` · ${entry.tool_call_id}` : ""}`),
      h("pre", {}, entry.content)));
  } else {
    body.push(h("div", { class: "content" }, entry.content));
  }
  if (entry.tool_calls !== null && entry.tool_calls !== undefined) {
    const calls = Array.isArray(entry.tool_calls) ? entry.tool_calls : [entry.tool_calls];
    for (const call of calls) {
      const name = (call && (call.name || (call.function && call.function.name))) || "tool";
      body.push(h("details", { class: "tool-call" },
        h("summary", {}, `Tool call · ${name}${call && call.id ? ` · ${call.id}` : ""}`),
        h("pre", {}, JSON.stringify(call, null, 2))));
    }
  }
  const usage = [];
  if (entry.token_count !== null) usage.push(`${entry.token_count} tok`);
  if (entry.turn_usage) {
    const u = entry.turn_usage;
    usage.push(`${u.model}: ${u.input_tokens} in / ${u.output_tokens} out`);
  }
  if (entry.turn_id) usage.push(`turn ${entry.turn_id}`);
  return h("li", {
    class: `entry role-${entry.role}`,
    dataset: { messageId: entry.message_id, role: entry.role, entryId: String(entry.id), turnId: entry.turn_id || null },
  },
    h("header", {},
      h("span", { class: "role" }, entry.role),
      h("span", { class: "muted" }, `#${entry.id} · ${when(entry.created_at)}${usage.length ? ` · ${usage.join(" · ")}` : ""}`),
      h("button", {
        type: "button",
        class: "fork",
        disabled: !has("branch"),
        title: has("branch") ? "Branch a new session with the history before this message" : "This build has no branch()",
        "aria-label": `Fork before message ${entry.id}`,
        onclick: () => guarded(() => forkBefore(entry.message_id)),
      }, "Fork here")),
    ...body);
}

async function appendMessage(key, request) {
  const entry = await spool.appendEntry(WORKSPACE, { key, request });
  return entry;
}

function readAppendForm(form) {
  const data = new FormData(form);
  const request = { role: data.get("role"), content: data.get("content") };
  const tokens = data.get("token_count");
  if (tokens !== "") request.token_count = Number(tokens);
  const calls = String(data.get("tool_calls") || "").trim();
  if (calls) request.tool_calls = JSON.parse(calls);
  const callId = String(data.get("tool_call_id") || "").trim();
  if (callId) request.tool_call_id = callId;
  const turnId = String(data.get("turn_id") || "").trim();
  if (turnId) request.turn_id = turnId;
  return request;
}

// ---------------------------------------------------------------- compaction

async function compact(window, blocking) {
  const request = { context_window_tokens: window, config: { coverage_blocking: blocking } };
  $("progress").textContent = "";
  // What the summary must keep, as the engine extracted it (prepare writes nothing).
  const prepared = await spool.prepareCompaction(WORKSPACE, { key: current, request });
  const result = await spool.compact(WORKSPACE, { key: current, request });
  renderReport(prepared, result);
  await Promise.all([renderSession(), refreshSessions()]);
  return result;
}

function renderReport(prepared, result) {
  const missing = result.missing_obligations || [];
  // Facts the engine could not fit in the window: listed, never silently gone.
  const dropped = result.dropped_obligations || [];
  const backfilling = ["pass_with_backfill", "partial_backfill"].includes(result.coverage_status);
  const backfilled = backfilling ? missing.filter((m) => !dropped.includes(m)) : [];
  const unmet = result.coverage_status === "fail_blocked" ? missing : [];
  const rows = [
    ["coverage", result.coverage_status],
    ["obligations", prepared.skip_reason ? 0 : prepared.obligations.length],
    ["backfilled", backfilled.length],
    ["dropped", dropped.length],
    ["missing", unmet.length],
    ["removed", result.removed_count],
    ["tokens before", result.tokens_before],
    ["tokens after", result.tokens_after],
    ["summary source", result.summary_source],
  ];
  if (result.skip_reason) rows.push(["skipped", result.skip_reason]);
  $("compact-report").replaceChildren(...[
    h("dl", { class: "report", dataset: { coverage: result.coverage_status } },
      rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", { dataset: { field: name } }, String(value))])),
    backfilled.length ? h("details", {}, h("summary", {}, "Back-filled facts"), h("ul", {}, backfilled.map((m) => h("li", {}, m)))) : null,
    dropped.length ? h("details", { open: true }, h("summary", {}, "Facts that did not fit (still in the canonical transcript)"), h("ul", {}, dropped.map((m) => h("li", {}, m)))) : null,
    unmet.length ? h("details", { open: true }, h("summary", {}, "Missing facts"), h("ul", {}, unmet.map((m) => h("li", {}, m)))) : null,
    result.summary ? h("details", { open: true }, h("summary", {}, "Summary"), h("pre", { class: "summary" }, result.summary)) : null,
  ].filter(Boolean));
}

// ---------------------------------------------------------------- branches

async function forkBefore(messageId) {
  const parent = current;
  const child = `${parent}:fork-${Date.now().toString(36)}`;
  await spool.branch(WORKSPACE, { parent_key: parent, child_key: child, request: { fork_before_message_id: messageId } });
  status(`Forked ${child} before ${messageId}.`);
  await refreshSessions();
  await select(child);
}

async function renderLineage() {
  const panel = $("lineage-tree");
  if (!has("lineage")) {
    panel.replaceChildren(h("p", { class: "muted" }, "This build of the engine has no lineage()."));
    return;
  }
  if (!current) {
    panel.replaceChildren(h("p", { class: "muted" }, "Select a session."));
    return;
  }
  // Walk up to the root, then draw the tree down from it.
  let root;
  try {
    root = await spool.lineage(WORKSPACE, { key: current });
  } catch (error) {
    panel.replaceChildren(h("p", { class: "muted" }, error.code === "not_found" ? "No such session." : String(error.message)));
    return;
  }
  const forks = await providerForks();
  for (let hops = 0; hops < 32; hops += 1) {
    const from = forks.from.get(root.key);
    const parent = root.parent_session_key || (from && from.source_key);
    if (!parent) break;
    try {
      root = await spool.lineage(WORKSPACE, { key: parent });
    } catch {
      break; // the parent was deleted: this branch is the root we can see
    }
  }
  panel.replaceChildren(h("ul", { class: "tree" }, await lineageNode(root, 0, forks)));
}

/**
 * Where the listed sessions come from by provider fork. A provider fork's child is linked
 * to its source by its fork lineage, not as a branch, so `lineage()` does not list it:
 * one `forkProjection` over the listed sessions says, for each, what the engine recorded.
 */
async function providerForks() {
  const from = new Map(); // child key → ForkLineage
  const children = new Map(); // source key → child keys
  if (!has("forkProjection")) return { from, children };
  const keys = allSessions.map((s) => s.key);
  try {
    for (let at = 0; at < keys.length; at += 1000) {
      const projection = await spool.forkProjection(WORKSPACE, { keys: keys.slice(at, at + 1000), mode: "list" });
      for (const session of projection.sessions) {
        if (!session.forked_from) continue;
        from.set(session.key, session.forked_from);
        const source = session.forked_from.source_key;
        children.set(source, [...(children.get(source) || []), session.key]);
      }
    }
  } catch (error) {
    if (error.code !== "not_found") throw error; // a listed session was deleted meanwhile
  }
  return { from, children };
}

async function lineageNode(view, depth, forks) {
  const label = h("button", {
    type: "button",
    class: view.key === current ? "node selected" : "node",
    "aria-current": view.key === current ? "true" : null,
    onclick: () => select(view.key),
  }, view.key);
  const from = forks.from.get(view.key);
  let note = null;
  if (view.fork_point && view.fork_point.before_message_id) {
    note = h("span", { class: "muted" }, ` before ${view.fork_point.before_message_id}`);
  } else if (from) {
    note = h("span", { class: "muted" }, ` provider fork${from.source_turn_id ? ` through ${from.source_turn_id}` : ""}`);
  }
  const keys = [...view.children.map((c) => c.key), ...(forks.children.get(view.key) || [])];
  const kids = depth < 8
    ? await Promise.all(keys.map((key) => spool.lineage(WORKSPACE, { key }).then((v) => lineageNode(v, depth + 1, forks))))
    : [];
  return h("li", { dataset: { key: view.key, fork: from ? "provider" : null } }, label, note, kids.length ? h("ul", {}, kids) : null);
}

// ---------------------------------------------------------------- import

async function importText(text, chosen) {
  if (!has("planImport") || !has("importSession")) {
    throw new Error("This build of the engine has no planImport()/importSession().");
  }
  const format = chosen === "auto" ? detectFormat(text) : chosen;
  if (!format) throw new Error("Cannot tell the format: choose Claude Code, Codex or a Spool export.");
  // The engine plans the import (keys, links, slices): this only follows it, like the CLI.
  const { log, sessions } = spool.planImport(format, text);
  const keys = [];
  let imported = 0;
  for (const planned of sessions) {
    const { key, link, session } = planned;
    let parentKey = null;
    if (link && !(await spool.getSession(WORKSPACE, { key }))) {
      if (link.kind === "branch") {
        const request = link.before_message_id
          ? { fork_before_message_id: link.before_message_id }
          : { fork_transcript: true };
        await spool.branch(WORKSPACE, { parent_key: link.parent_key, child_key: key, request });
      } else if (await spool.getSession(WORKSPACE, { key: link.parent_key })) {
        parentKey = link.parent_key;
      }
    }
    let start = 0;
    for (const end of planned.slice_ends) {
      const slice = { ...session, entries: session.entries.slice(start, end) };
      const request = { key, format, session: slice, parent_key: parentKey };
      const outcome = await spool.importSession(WORKSPACE, { request });
      imported += outcome.imported;
      parentKey = null;
      start = end;
    }
    keys.push(key);
  }
  const skipped = Object.entries(log.skipped).map(([kind, n]) => `${kind} ${n}`).join(", ");
  $("import-report").textContent =
    `${format}: ${sessions.length} session(s), ${imported} new entries, ${log.invalid_lines.length} invalid line(s)` +
    (skipped ? `; skipped ${skipped}` : "") +
    (log.attachments ? `; ${log.attachments} attachment(s) described, ${log.attachment_bytes_not_stored} bytes not stored.` : ".");
  await Promise.all([refreshSessions(), refreshRuns()]); // an import may record the agent's run
  if (keys.length) await select(keys[0]);
}

async function importFile(file) {
  status(`Importing ${file.name}…`);
  await importText(await file.text(), $("import-format").value);
  status(`Imported ${file.name}.`);
}

// ---------------------------------------------------------------- resume

async function refreshRuns() {
  const list = await spool.listRuns(WORKSPACE, { limit: 100 });
  $("runs").tBodies[0].replaceChildren(
    ...list.runs.map((r) =>
      h("tr", {}, [r.agent_type, r.project_id, r.session_id, r.task_id, r.status].map((v) => h("td", {}, v)))),
  );
}

function renderDecision(decision) {
  const text = decision.mode === "resume"
    ? `resume ${decision.session_id}`
    : `${decision.mode}: nothing to resume`;
  const out = $("resume-decision");
  out.textContent = text;
  out.dataset.mode = decision.mode;
}

// ---------------------------------------------------------------- wiring

function wire() {
  $("workspace-name").textContent = WORKSPACE;
  $("search").addEventListener("input", renderSessions);

  $("new-session").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("new-key");
    guarded(async () => {
      await createSession(input.value.trim());
      input.value = "";
    });
  });

  $("append").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    if (!current) return status("Select or create a session first.", "error");
    guarded(async () => {
      await appendMessage(current, readAppendForm(form));
      form.elements.content.value = "";
      form.elements.tool_calls.value = "";
      form.elements.tool_call_id.value = "";
      form.elements.token_count.value = "";
      await refreshAll();
      status("Appended.");
    });
  });

  $("compact").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!current) return status("Select or create a session first.", "error");
    guarded(() => compact(Number($("compact-window").value), $("compact-blocking").checked));
  });

  $("record-run").addEventListener("submit", (event) => {
    event.preventDefault();
    const run = Object.fromEntries(new FormData(event.currentTarget));
    guarded(async () => {
      await spool.recordRun(WORKSPACE, { run });
      status(`Recorded ${run.agent_type} run ${run.session_id} (${run.status}).`);
      await refreshRuns();
    });
  });

  $("select-resume").addEventListener("submit", (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(event.currentTarget));
    const request = { agent_type: data.agent_type, project_id: data.project_id || null };
    guarded(async () => renderDecision(await spool.selectResume(WORKSPACE, { request })));
  });

  const zone = $("drop-zone");
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    const file = event.dataTransfer && event.dataTransfer.files[0];
    if (file) guarded(() => importFile(file));
  });
  $("import-file").addEventListener("change", (event) => {
    const file = event.target.files[0];
    if (file) guarded(() => importFile(file));
  });

  // Links and the back button select a session through the URL's hash.
  window.addEventListener("hashchange", () => {
    const key = decodeURIComponent(location.hash.slice(1));
    if (key && key !== current) guarded(() => select(key));
  });

  wireSessionActions(page);
  wireTurns(page);
  wireStates(page);
  wireProviderFork(page);
  wireSearch(page);

  $("execute").addEventListener("submit", (event) => {
    event.preventDefault();
    runExecute();
  });
  $("ops-filter").addEventListener("input", (event) => {
    const needle = event.target.value.trim().toLowerCase();
    for (const li of $("ops-list").children) li.hidden = !li.dataset.method.toLowerCase().includes(needle);
  });
}

// ---------------------------------------------------------------- operations

/** What the section modules get from the page. */
const page = {
  workspace: WORKSPACE,
  spool: () => spool,
  current: () => current,
  status,
  guarded,
  refresh: refreshAll,
  deselect,
  select,
};

/** What the Operations panel gets from the page. */
const panelContext = {
  Spool,
  spoolCalls,
  spool: () => spool,
  workspace: WORKSPACE,
  dbName: DB_NAME,
  current: () => current,
  reopen,
  // A call may have written anything: show the page as the engine has it now.
  after: () => guarded(async () => {
    await refreshRuns();
    await refreshAll();
  }),
};

/** Another tab wrote: refresh what this one shows. */
function listen() {
  // A long call (a compaction's passes, a reset's archive) says how far it has got.
  spool.onProgress((p) => {
    const of = p.total ? ` of ${p.total}` : "";
    $("progress").textContent = `${p.phase}: ${p.done}${of} entries`;
  });
  spool.onChange((change) => {
    if (!change || change.workspace !== WORKSPACE) return;
    guarded(async () => {
      await refreshRuns();
      await refreshAll();
    });
  });
}

/** After `close` from the Operations panel: the page needs an open database. */
async function reopen() {
  spool = await Spool.open(DB_NAME);
  listen();
}

function updateExecutePrefill() {
  const box = $("execute-command");
  if (box.value !== (box.dataset.prefilled || "")) return; // the user's own command stays
  box.value = JSON.stringify(current ? { op: "count_entries", key: current } : { op: "list_sessions", limit: 10 });
  box.dataset.prefilled = box.value;
}

async function runExecute() {
  const out = $("execute-result");
  try {
    const command = JSON.parse($("execute-command").value);
    const value = await spool.execute(WORKSPACE, command);
    out.dataset.outcome = "ok";
    delete out.dataset.code;
    out.replaceChildren(h("pre", {}, JSON.stringify(value, null, 2)));
  } catch (error) {
    out.dataset.outcome = "error";
    out.dataset.code = (error && error.code) || (error instanceof SyntaxError ? "page:json" : "unknown");
    out.replaceChildren(h("p", { class: "error" }, describeError(error)));
  }
  out.dataset.runs = String(Number(out.dataset.runs || 0) + 1);
  await panelContext.after();
}

// ---------------------------------------------------------------- start

async function main() {
  wire();
  await init();
  $("chat-link").href = `chat.html${location.search}`;
  spool = await Spool.open(DB_NAME);
  listen();
  updateExecutePrefill();
  const importable = has("planImport") && has("importSession");
  $("drop-zone").setAttribute("aria-disabled", String(!importable));
  if (!importable) $("import-report").textContent = "This build of the engine has no import.";
  await refreshSessions();
  await refreshRuns();
  const fromHash = decodeURIComponent(location.hash.slice(1));
  if (fromHash) await guarded(() => select(fromHash));
  else await renderLineage();
  // Cold start: navigation start → app ready, read by the end-to-end test.
  document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
  document.documentElement.dataset.ready = "true";
  // The Operations panel sits below the fold: drawn once the page is ready, so fetching
  // the declarations and drawing every method's row does not delay the start.
  try {
    await renderOperationsPanel();
    document.documentElement.dataset.opsReady = "true";
  } catch (error) {
    showError(error);
    document.documentElement.dataset.opsReady = "failed";
  }
}

async function renderOperationsPanel() {
  const declarations = await loadDeclarations(new URL("../pkg/spool_web.d.ts", import.meta.url));
  operations = renderOperations($("ops-list"), panelContext, declarations);
  $("ops-count").textContent = `${operations.methods.length} methods, listed from the Spool class` +
    (declarations ? "; types and docs from spool_web.d.ts." : "; spool_web.d.ts was not served, so names come from the functions.");
}

// For the console and the end-to-end test: the same actions the buttons run.
window.spoolDemo = {
  workspace: WORKSPACE,
  get spool() { return spool; },
  append: async (key, request) => {
    const entry = await appendMessage(key, request);
    if (key === current) await renderSession();
    return entry;
  },
  importText,
  turnPaging,
  refresh: () => Promise.all([refreshSessions(), current ? renderSession() : null]),
  select,
  /** Opens a search hit as clicking it does: its session, the entry in view. */
  openHit: (hit) => openHit(page, hit),
  /** The Operations panel: every method it lists (from the class), by name. */
  operations: {
    methods: () => (operations ? operations.methods.map((m) => m.name) : []),
    lastValue: (name) => operations.rows.get(name).lastValue,
  },
};

main().catch((error) => {
  showError(error);
  document.documentElement.dataset.ready = "failed";
});
