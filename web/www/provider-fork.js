// A provider fork driven by the page, with the provider simulated here: the page is the
// host, so calling the provider is its job, and here the user answers for it. Every step
// is one engine call; which transitions are allowed, the turn barrier and the child's
// history are the engine's (a step it refuses shows its code and reason).

import { $, h, json, describeError } from "./dom.js";

let operation = null; // the operation view the engine last returned

function show(op) {
  operation = op;
  const dl = $("fork-op");
  dl.dataset.status = op ? op.status : "";
  dl.dataset.phase = op && op.phase ? op.phase : "";
  dl.dataset.state = op ? op.state : "";
  if (!op) {
    dl.replaceChildren(h("dt", {}, "operation"), h("dd", {}, "none yet"));
  } else {
    const rows = [
      ["operation", op.operation_id],
      ["status", op.status],
      ["phase", op.phase || "—"],
      ["state", op.state],
      ["point", op.point.kind === "through_turn" ? `through ${op.point.turn_id}` : "whole session"],
      ["target", op.target_key],
      ["acknowledged", String(op.acknowledged)],
    ];
    if (op.error) rows.push(["error", op.error]);
    if (op.error_reason) rows.push(["reason", op.error_reason]);
    dl.replaceChildren(...rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", { dataset: { field: name } }, value)]));
  }
  for (const id of ["fork-dispatch", "fork-accept", "fork-reject", "fork-unknown", "fork-commit", "fork-ack"]) {
    $(id).disabled = !op;
  }
}

/** Offers the selected session's turns as fork points (the engine decides which qualify). */
export function offerTurns(turns, key) {
  const select = $("fork-turn");
  const chosen = select.value;
  select.replaceChildren(h("option", { value: "" }, "whole session"),
    ...turns.map((t) => h("option", { value: t.turn_id }, `${t.turn_id} (${t.phase})`)));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
  const target = $("fork-target");
  if (key && (!target.value || target.dataset.auto === "true")) {
    target.value = `${key}:pfork-${Date.now().toString(36)}`;
    target.dataset.auto = "true";
  }
}

/** Runs one step: shows what the engine answered, or its refusal, and the operation. */
async function step(page, name, call) {
  const out = $("fork-step");
  try {
    const result = await call();
    out.dataset.outcome = "ok";
    delete out.dataset.code;
    out.textContent = `${name}: ok`;
    return result;
  } catch (error) {
    out.dataset.outcome = "error";
    out.dataset.code = error && error.code ? error.code : "unknown";
    out.textContent = `${name}: ${describeError(error)}`;
    page.status(`${name}: ${describeError(error)}`, "error");
    return undefined;
  } finally {
    if (operation) {
      const fresh = await page.spool().getForkOperation(page.workspace, { operation_id: operation.operation_id }).catch(() => null);
      if (fresh) show(fresh);
    }
  }
}

export function wireProviderFork(page) {
  show(null);
  const ws = () => page.workspace;
  const id = () => operation.operation_id;
  $("fork-target").addEventListener("input", (event) => { event.target.dataset.auto = "false"; });

  $("fork-prepare").addEventListener("submit", (event) => {
    event.preventDefault();
    const source = page.current();
    if (!source) return page.status("Select or create a session first.", "error");
    const request = {
      request_id: `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
      target_key: $("fork-target").value.trim(),
      target_session_id: crypto.randomUUID(),
      through_turn_id: $("fork-turn").value || null,
    };
    $("fork-payload").replaceChildren();
    return step(page, "prepare", async () => {
      show(await page.spool().fork(ws(), { source_key: source, request }));
      $("fork-target").dataset.auto = "true";
    });
  });

  $("fork-dispatch").addEventListener("click", () => step(page, "dispatch", async () => {
    const payload = await page.spool().beginForkDispatch(ws(), { operation_id: id() });
    // What the host sends its provider: here it lands on the page, and the user answers.
    $("fork-payload").replaceChildren(h("details", { open: true },
      h("summary", {}, "Sent to the simulated provider"), h("pre", {}, json(payload))));
  }));

  const answer = (name, disposition) => step(page, name, async () => {
    show(await page.spool().recordForkDisposition(ws(), { operation_id: id(), disposition: disposition() }));
  });
  $("fork-accept").addEventListener("click", () => answer("accept", () => ({
    disposition: "accepted",
    target_provider_session_id: `sim-${id().slice(0, 8)}`,
  })));
  $("fork-reject").addEventListener("click", () => answer("reject", () => ({
    disposition: "rejected",
    error: $("fork-error").value,
    reason: $("fork-reason").value.trim() || null,
  })));
  $("fork-unknown").addEventListener("click", () => answer("undeliverable", () => ({
    disposition: "unknown",
    error: "the simulated provider never answered",
  })));

  $("fork-commit").addEventListener("click", () => step(page, "commit", async () => {
    show(await page.spool().commitFork(ws(), { operation_id: id() }));
    await page.refresh();
  }));
  $("fork-ack").addEventListener("click", () => step(page, "acknowledge", async () => {
    show(await page.spool().acknowledgeForkOperation(ws(), { operation_id: id() }));
  }));
}
