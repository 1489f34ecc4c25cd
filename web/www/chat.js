// Spool's chat view: an agent UI on the engine. A scripted local model (no network: a
// deterministic generator) streams each answer token by token; the page keeps it durable
// as it arrives (`beginEntry`, `updateEntry` every 250 ms or 1 KiB, `settleEntry`), stops
// it (`abortEntry`), and shows an answer a closed tab left in progress. Branching,
// accounting, search and compaction are the engine's: nothing here decides a session rule.

import init, { Spool } from "../pkg/spool_web.js";
import { $, h, describeError } from "./dom.js";

const params = new URLSearchParams(location.search);
const WORKSPACE = params.get("ws") || "default";
const DB_NAME = params.get("db") || "spool-demo";
/** Milliseconds between two tokens of the scripted model. */
const TOKEN_MS = Number(params.get("token_ms") || 40);
/** The page writes what arrived at most this often, or once this many bytes arrived. */
const WRITE_MS = 250;
const WRITE_BYTES = 1024;
/** Demo prices in dollars per million tokens: a display figure, nothing is billed. */
const PRICE = { input: 3, output: 15 };
const MODEL = "scripted-1";
const PREFIX = "agent:chat:";

let spool;
let current = null;
/** The answer streaming now: `{ key, stop }`. */
let live = null;

// ---------------------------------------------------------------- helpers

function status(text, kind = "info") {
  const el = $("status");
  el.textContent = text;
  el.dataset.kind = kind;
}

async function guarded(action) {
  try {
    return await action();
  } catch (error) {
    status(describeError(error), "error");
    console.error(error);
    return undefined;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const cost = (input, output) => (input * PRICE.input + output * PRICE.output) / 1e6;
const dollars = (n) => `$${n.toFixed(4)}`;
/** About four characters a token, as the engine estimates when a writer reports none. */
const tokens = (text) => Math.ceil(text.length / 4);

// ---------------------------------------------------------------- the scripted model

/** What the model answers to `prompt`: text, a tool call with its result, more text. */
function script(prompt, turn) {
  const topic = prompt.trim().replace(/\s+/g, " ").slice(0, 80);
  return {
    opening: `Looking into "${topic}". I will read the code before changing anything, ` +
      "so the fix matches how the parser is used today.",
    call: { id: `call_${turn}`, name: "read_file", input: { path: "src/parser.rs" } },
    result: "pub fn parse(input: &str) -> Vec<Token> {\n    let mut out = Vec::new();\n" +
      "    // the last element is pushed after the loop\n    out\n}",
    answer: `Done with "${topic}": the parser now pushes the last element before it ` +
      "returns, and a test covers nested lists of one, two and three levels. Every test " +
      "passes; the change is three lines in src/parser.rs and the new test in " +
      "tests/parser.rs. Next I would check the error messages for an unclosed list.",
  };
}

/** Splits text into the pieces the model emits: a word and its space at a time. */
const pieces = (text) => text.match(/\S+\s*/g) || [];

// ---------------------------------------------------------------- streaming

/**
 * Streams `text` into a new assistant entry of `turn` in `key`: begins it, writes what
 * arrived at the page's cadence, and settles it with its usage (with `toolCall` when the
 * answer makes one). Returns false when the user stopped it (then it is aborted).
 */
async function streamAnswer(key, turn, text, toolCall, promptTokens) {
  const entry = await spool.beginEntry(WORKSPACE, {
    key,
    request: { role: "assistant", content: "", turn_id: turn },
  });
  const li = renderMessage(entry);
  $("messages").append(li);
  let stopped = false;
  live = { key, stop: () => { stopped = true; } };
  $("stop").disabled = false;
  let sofar = "";
  let written = 0;
  let lastWrite = performance.now();
  const write = async (extra = {}) => {
    await spool.updateEntry(WORKSPACE, {
      key,
      update: { message_id: entry.message_id, content: sofar, ...extra },
    });
    written = sofar.length;
    lastWrite = performance.now();
  };
  for (const piece of pieces(text)) {
    await sleep(TOKEN_MS);
    if (stopped) break;
    sofar += piece;
    li.querySelector(".text").textContent = sofar;
    const due = performance.now() - lastWrite >= WRITE_MS || sofar.length - written >= WRITE_BYTES;
    if (due) await write();
  }
  const usage = { model: MODEL, input_tokens: promptTokens, output_tokens: tokens(sofar) };
  live = null;
  $("stop").disabled = true;
  if (stopped) {
    await spool.abortEntry(WORKSPACE, {
      key,
      update: { message_id: entry.message_id, content: sofar, reason: "stopped by the user", turn_usage: usage },
    });
    return false;
  }
  await spool.settleEntry(WORKSPACE, {
    key,
    update: {
      message_id: entry.message_id,
      content: sofar,
      tool_calls: toolCall ? [toolCall] : null,
      turn_usage: usage,
    },
  });
  return true;
}

/** The model's turn after the user's `prompt` in `key`. */
async function respond(key, prompt, turn) {
  const s = script(prompt, turn);
  const history = await transcript(key);
  const context = tokens(history.map((e) => e.content).join("\n"));
  $("send").disabled = true;
  try {
    if (!(await streamAnswer(key, turn, s.opening, s.call, context))) return;
    await spool.appendEntry(WORKSPACE, {
      key,
      request: { role: "tool", content: s.result, tool_call_id: s.call.id, turn_id: turn, tool_status: "ok" },
    });
    await render();
    await streamAnswer(key, turn, s.answer, null, context + tokens(s.opening + s.result));
  } finally {
    $("send").disabled = !current;
    await render();
    await refreshList();
  }
}

// ---------------------------------------------------------------- rendering

async function transcript(key) {
  const entries = [];
  let cursor = null;
  do {
    const page = await spool.readPage(WORKSPACE, { key, request: { order: "oldest_first", limit: 200, cursor } });
    entries.push(...page.entries);
    cursor = page.next_cursor;
  } while (cursor);
  return entries;
}

function badge(entry) {
  if (entry.status === "in_progress") {
    return live ? "streaming…" : "in progress when the page closed";
  }
  if (entry.status === "incomplete") return `incomplete (${entry.stop_reason || "aborted"})`;
  return null;
}

function renderMessage(entry) {
  const usage = entry.turn_usage;
  const figures = usage
    ? `in ${usage.input_tokens} · out ${usage.output_tokens} · ${dollars(cost(usage.input_tokens, usage.output_tokens))}`
    : null;
  const calls = Array.isArray(entry.tool_calls) ? entry.tool_calls : [];
  const li = h("li", {
    class: "message",
    dataset: { role: entry.role, messageId: entry.message_id, status: entry.status || "done" },
  },
  h("div", { class: "meta" },
    h("strong", {}, entry.role),
    badge(entry) && h("span", { class: "badge" }, badge(entry)),
    figures && h("span", { class: "usage" }, figures),
    entry.role === "user" && h("button", { type: "button", class: "edit", onclick: () => editor(li, entry) }, "Edit"),
  ),
  h("p", { class: "text" }, entry.content),
  ...calls.map((c) => h("p", { class: "muted" }, `→ ${c.name}(${JSON.stringify(c.input)})`)));
  return li;
}

/** "Edit and retry": the edited message opens a branch (the engine's `editMessage`). */
function editor(li, entry) {
  if (li.querySelector("form")) return;
  const area = h("textarea", { class: "edit-text", rows: 2 });
  area.value = entry.content;
  const form = h("form", { class: "row" }, area, h("button", { type: "submit" }, "Retry"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const text = area.value.trim();
      if (!text) return;
      const child = `${current}-edit-${Date.now().toString(36)}`;
      const turn = `turn-${Date.now().toString(36)}`;
      await spool.editMessage(WORKSPACE, {
        key: current,
        child_key: child,
        message_id: entry.message_id,
        request: { role: "user", content: text, turn_id: turn },
      });
      status(`branched ${child} from ${current}`);
      await select(child);
      await respond(child, text, turn);
    });
  });
  li.append(form);
  area.focus();
}

async function render() {
  if (!current) return;
  const [entries, session] = await Promise.all([
    transcript(current),
    spool.getSession(WORKSPACE, { key: current }),
  ]);
  $("messages").replaceChildren(...entries.map(renderMessage));
  $("chat-title").textContent = current;
  const usage = session
    ? `${session.input_tokens} in · ${session.output_tokens} out · ${dollars(cost(session.input_tokens, session.output_tokens))}`
    : "";
  $("chat-usage").textContent = usage;
  $("chat-usage").dataset.input = session ? session.input_tokens : 0;
}

// ---------------------------------------------------------------- conversations

async function refreshList() {
  const query = $("chat-search").value.trim();
  const sessions = [];
  let cursor = null;
  do {
    const page = await spool.listSessions(WORKSPACE, { limit: 200, cursor });
    sessions.push(...page.sessions.filter((s) => s.key.startsWith(PREFIX)));
    cursor = page.next_cursor;
  } while (cursor);
  let shown = sessions;
  if (query) {
    // Full-text search over every message: the conversations that hold a hit.
    const page = await spool.search(WORKSPACE, { query, limit: 100 });
    const hit = new Set(page.hits.map((x) => x.session_key));
    shown = sessions.filter((s) => hit.has(s.key));
  }
  $("chat-list").replaceChildren(...shown.map((s) =>
    h("li", { dataset: { key: s.key } },
      h("button", {
        type: "button",
        class: s.key === current ? "session selected" : "session",
        "aria-current": s.key === current ? "true" : null,
        onclick: () => guarded(() => select(s.key)),
      }, s.key))));
}

async function select(key) {
  current = key;
  for (const id of ["prompt", "send", "chat-compact"]) $(id).disabled = false;
  await render();
  await refreshList();
}

async function newChat() {
  const key = `${PREFIX}${Date.now().toString(36)}`;
  await spool.createSession(WORKSPACE, { key });
  await select(key);
  $("prompt").focus();
}

async function send(event) {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || !current || live) return;
  const turn = `turn-${Date.now().toString(36)}`;
  $("prompt").value = "";
  // A begin of this turn marks an answer a closed tab left in progress `incomplete`.
  await spool.appendEntry(WORKSPACE, { key: current, request: { role: "user", content: text, turn_id: turn } });
  await render();
  await respond(current, text, turn);
}

async function compact() {
  const request = { context_window_tokens: 400 };
  const result = await spool.compact(WORKSPACE, { key: current, request });
  $("chat-coverage").textContent = result.skip_reason
    ? `compaction skipped: ${result.skip_reason}`
    : `compacted: ${result.removed_count} messages summarized, coverage ${result.coverage_status}, ` +
      `${result.tokens_before} → ${result.tokens_after} tokens`;
  $("chat-coverage").dataset.coverage = result.coverage_status || result.skip_reason || "";
  await render();
}

async function main() {
  await init();
  spool = await Spool.open(DB_NAME);
  $("console-link").href = `index.html${location.search}`;
  $("new-chat").addEventListener("click", () => guarded(newChat));
  $("composer").addEventListener("submit", (event) => guarded(() => send(event)));
  $("stop").addEventListener("click", () => live && live.stop());
  $("chat-search").addEventListener("input", () => guarded(refreshList));
  $("chat-compact").addEventListener("click", () => guarded(compact));
  spool.onChange(() => guarded(async () => {
    // Another tab wrote: show what it wrote, unless this tab is streaming.
    if (!live) {
      await render();
      await refreshList();
    }
  }));
  await refreshList();
  const first = document.querySelector("#chat-list li");
  if (first) await select(first.dataset.key);
  document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
  document.documentElement.dataset.ready = "true";
  status("ready");
}

main().catch((error) => {
  status(describeError(error), "error");
  document.documentElement.dataset.ready = "failed";
});
