// The Operations panel: every method of the `Spool` class, listed from the class itself at
// runtime (so the list cannot drift from the package), each with one JSON input per
// argument, a Run button and the engine's answer — the result as JSON, or the typed error
// with its reason code. Parameter names, types and docs come from the package's own
// TypeScript declarations (`spool_web.d.ts`, generated from the Rust side) when the page
// can fetch them, and from the functions' source otherwise. The methods of the engine's
// operation table all take `(workspace, args)`: their one JSON `args` box is described
// (fields, which are optional, docs) by the package's `spoolCalls()`, from the same table.

import { h, json, describeError } from "./dom.js";

/**
 * Members the panel does not call: the constructor, wasm-bindgen's internals (`__…`),
 * `free` (it destroys the instance the page runs on), `onChange` (the page's own
 * cross-tab listener: an instance holds one, and replacing it would blind the page) and
 * `onProgress` (the page's progress line, likewise one per instance).
 */
const NOT_CALLABLE = new Set(["constructor", "free", "onChange", "onProgress"]);

/** Parameter names (and fields of a table call's `args`) that take the page's current
 * workspace, session or database. */
const PREFILL = {
  workspace: (ctx) => ctx.workspace,
  key: (ctx) => ctx.current(),
  source_key: (ctx) => ctx.current(),
  parent_key: (ctx) => ctx.current(),
  keys: (ctx) => (ctx.current() ? [ctx.current()] : null),
  dbName: (ctx) => ctx.dbName,
};

/** The pre-fill of a table call's `args`: the fields of `call` that follow the page. */
function argsPrefill(call, ctx) {
  const args = {};
  for (const field of call.fields) {
    const value = PREFILL[field.name] && PREFILL[field.name](ctx);
    if (value !== null && value !== undefined) args[field.name] = value;
  }
  return Object.keys(args).length ? args : null;
}

/** The pre-fill of the input of `param` in the row of a method (`call`: its table entry). */
function prefillOf(param, call, ctx) {
  if (call && param.name === "args") return argsPrefill(call, ctx);
  return PREFILL[param.name] ? PREFILL[param.name](ctx) : null;
}

/** The callable methods of `Spool`: `{ name, isStatic }`, by name. */
export function spoolMethods(Spool) {
  const own = (target, isStatic) =>
    Object.getOwnPropertyNames(target)
      .filter((name) => !name.startsWith("__") && !NOT_CALLABLE.has(name))
      .filter((name) => typeof Object.getOwnPropertyDescriptor(target, name).value === "function")
      .map((name) => ({ name, isStatic, fn: target[name] }));
  return [...own(Spool.prototype, false), ...own(Spool, true)]
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The parameter names in a function's source: what the glue really takes. */
function sourceParams(fn) {
  const match = /^[^(]*\(([^)]*)\)/.exec(Function.prototype.toString.call(fn));
  if (!match) return [];
  return match[1].split(",").map((p) => p.trim().replace(/=.*$/, "").trim()).filter(Boolean);
}

// ---------------------------------------------------------------- the .d.ts

/** Fetches and reads the package's declarations; `null` when they are not served. */
export async function loadDeclarations(url) {
  try {
    const response = await fetch(url);
    return response.ok ? parseDeclarations(await response.text()) : null;
  } catch {
    return null;
  }
}

/** The `Spool` class's signatures and docs, and every exported type's declaration. */
export function parseDeclarations(text) {
  const methods = new Map();
  const types = new Map();
  const start = text.indexOf("export class Spool {");
  if (start >= 0) {
    const body = text.slice(start, text.indexOf("\n}", start));
    let doc = [];
    for (const raw of body.split("\n").slice(1)) {
      const line = raw.trim();
      if (line.startsWith("/**")) {
        doc = [line.slice(3).replace(/\*\/$/, "").trim()].filter(Boolean);
        continue;
      }
      if (line === "*/") continue;
      if (line.startsWith("*")) {
        const text = line.replace(/^\*\s?/, "");
        if (!text.startsWith("@")) doc.push(text);
        continue;
      }
      const match = /^(static\s+)?(\w+)\((.*)\):\s*(.+);$/.exec(line);
      if (match) {
        methods.set(match[2], {
          params: splitParams(match[3]),
          returns: match[4],
          doc: doc.join(" ").replace(/\s+/g, " ").trim(),
        });
      }
      doc = [];
    }
  }
  const exported = /^export (interface|type) (\w+)/gm;
  for (let m = exported.exec(text); m; m = exported.exec(text)) {
    types.set(m[2], declarationAt(text, m.index, m[1] === "interface"));
  }
  return { methods, types };
}

/** `a: string, b?: Record<string, unknown>` → `[{ name, optional, type }]`. */
function splitParams(list) {
  const parts = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < list.length; i += 1) {
    const c = list[i];
    if (c === "=" && list[i + 1] === ">") i += 1;
    else if ("{[(<".includes(c)) depth += 1;
    else if ("}])>".includes(c)) depth -= 1;
    else if (c === "," && depth === 0) {
      parts.push(list.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(list.slice(from));
  return parts.map((p) => p.trim()).filter(Boolean).map((p) => {
    const match = /^(\w+)(\?)?:\s*([\s\S]*)$/.exec(p);
    return match
      ? { name: match[1], optional: Boolean(match[2]), type: match[3] }
      : { name: p, optional: false, type: "unknown" };
  });
}

/** The text of the declaration starting at `index`: to its closing brace or semicolon. */
function declarationAt(text, index, isInterface) {
  let depth = 0;
  for (let i = index; i < text.length; i += 1) {
    const c = text[i];
    if (c === "=" && text[i + 1] === ">") i += 1;
    else if ("{[(<".includes(c)) depth += 1;
    else if ("}])>".includes(c)) {
      depth -= 1;
      if (isInterface && depth === 0 && c === "}") return text.slice(index, i + 1);
    } else if (c === ";" && depth === 0 && !isInterface) return text.slice(index, i + 1);
  }
  return text.slice(index);
}

/** The exported types a parameter's type names, with their declarations. */
function referencedTypes(type, types) {
  const names = new Set(type.match(/\b[A-Z]\w*\b/g) || []);
  return [...names].filter((name) => types.has(name)).map((name) => [name, types.get(name)]);
}

/** A function-typed parameter (a callback, a summarizer): JSON cannot carry it. */
function isFunctionType(type, types) {
  const bare = type.replace(/\|\s*null\b/g, "").trim();
  if (bare.includes("=>")) return true;
  const declared = types.get(bare);
  return Boolean(declared && /=\s*\(/.test(declared) && declared.includes("=>"));
}

// ---------------------------------------------------------------- the panel

/**
 * Renders the panel into `list` and returns `{ methods, rows }`. `ctx` gives the page's
 * `Spool` class, its instance (`spool()`), `workspace`, `dbName`, the selected session
 * (`current()`), `reopen()` (after `close`) and `after(name)` (refresh after a call).
 */
export function renderOperations(list, ctx, declarations) {
  const methods = spoolMethods(ctx.Spool);
  // The operation table's calls, by method name.
  ctx.calls = new Map((ctx.spoolCalls ? ctx.spoolCalls() : []).map((call) => [call.js_name, call]));
  const rows = new Map();
  list.replaceChildren(...methods.map((method) => {
    const row = renderMethod(method, ctx, declarations);
    rows.set(method.name, row);
    return row.element;
  }));
  return { methods, rows };
}

function renderMethod(method, ctx, declarations) {
  const declared = declarations && declarations.methods.get(method.name);
  const call = method.isStatic ? null : ctx.calls.get(method.name) || null;
  const names = sourceParams(method.fn);
  // The declarations describe this build only when they agree with the function.
  const params = declared && declared.params.length === names.length
    ? declared.params
    : names.map((name) => ({ name, optional: false, type: null }));
  const types = declarations ? declarations.types : new Map();
  const id = `op-${method.isStatic ? "static-" : ""}${method.name}`;
  const fields = params.map((param, index) => {
    const callback = param.type !== null && isFunctionType(param.type, types);
    const input = h("textarea", {
      id: `${id}-${index}`,
      rows: 1,
      spellcheck: "false",
      placeholder: callback ? "JSON the function returns" : (param.optional ? "optional: leave empty to omit" : "JSON"),
      dataset: { param: param.name, callback: callback ? "true" : null },
    });
    const table = call && param.name === "args";
    if (table) {
      input.placeholder = `{ ${call.fields.map((f) => `${f.name}${f.optional ? "?" : ""}`).join(", ")} }`;
      input.dataset.fields = call.fields.map((f) => f.name).join(" ");
    }
    const label = h("label", { for: input.id },
      h("code", {}, `${param.name}${param.optional ? "?" : ""}`),
      table ? h("span", { class: "muted" }, `: the call's fields in snake_case (its Command JSON without "op")`)
        : param.type ? h("span", { class: "muted" }, `: ${param.type}`) : null,
      callback ? h("span", { class: "muted" }, " — the panel passes a function returning this JSON (a stand-in for your LLM or callback)") : null);
    const refs = param.type ? referencedTypes(param.type, types) : [];
    const help = table
      ? h("details", { class: "type-help" }, h("summary", {}, `Fields of ${call.name}`),
        h("pre", {}, call.fields.map((f) => `${f.name}${f.optional ? "?" : ""}: ${f.type}`).join("\n")))
      : refs.length
      ? h("details", { class: "type-help" }, h("summary", {}, `Declaration of ${refs.map(([n]) => n).join(", ")}`),
        h("pre", {}, refs.map(([, text]) => text).join("\n")))
      : null;
    return { param, input, callback, field: h("div", { class: "op-arg stack" }, label, input, help) };
  });
  const output = h("output", {
    id: `${id}-result`, class: "op-result", for: fields.map((f) => f.input.id).join(" ") || null,
    "aria-live": "polite", dataset: { runs: "0" },
  });
  const signature = `${method.isStatic ? "Spool." : ""}${method.name}(${params.map((p) => `${p.name}${p.optional ? "?" : ""}`).join(", ")})`;
  const reset = () => {
    for (const { param, input } of fields) fill(input, prefillOf(param, call, ctx));
  };
  const form = h("form", { class: "stack", "aria-label": `Arguments of ${method.name}` },
    ...fields.map((f) => f.field),
    h("div", { class: "row" },
      h("button", { type: "submit", "aria-label": `Run ${method.name}` }, "Run"),
      h("button", { type: "button", class: "secondary", "aria-label": `Reset the arguments of ${method.name}`, onclick: reset }, "Reset")),
    output);
  const row = { method, call, fields, output, reset, element: null, lastValue: undefined };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run(row, ctx);
  });
  row.element = h("li", { dataset: { method: method.name, static: method.isStatic ? "true" : null, table: call ? "true" : null } },
    h("details", {},
      h("summary", {}, h("code", {}, signature), declared ? h("span", { class: "muted" }, ` → ${declared.returns}`) : null),
      declared && declared.doc ? h("p", { class: "doc" }, declared.doc)
        : call ? h("p", { class: "doc" }, call.doc) : null,
      form));
  reset();
  return row;
}

/** Reads the arguments: JSON each, empty → omitted, function parameters → a stand-in. */
function readArgs(row, calls) {
  const args = row.fields.map(({ param, input, callback }) => {
    const text = input.value.trim();
    let value;
    try {
      value = text === "" ? undefined : JSON.parse(text);
    } catch (error) {
      throw Object.assign(new Error(`argument ${param.name} is not JSON: ${error.message}`), { code: "page:json" });
    }
    if (!callback || text === "") return value;
    return (...received) => {
      calls.push(received);
      return value;
    };
  });
  while (args.length && args[args.length - 1] === undefined) args.pop();
  return args;
}

async function run(row, ctx) {
  const { method, output } = row;
  const calls = [];
  output.dataset.state = "running";
  try {
    const args = readArgs(row, calls);
    const target = method.isStatic ? ctx.Spool : ctx.spool();
    let value = await target[method.name](...args);
    const notes = [];
    if (value instanceof ctx.Spool) {
      // A second connection (`open`): show it, then close it so it holds nothing open.
      const opened = { name: value.name };
      await value.close();
      value.free();
      value = opened;
      notes.push("Opened a second Spool on that database, then closed it.");
    }
    if (method.name === "close") {
      await ctx.reopen();
      notes.push("The page opened the database again, so it keeps working.");
    }
    if (calls.length) notes.push(`The function argument was called ${calls.length} time(s).`);
    row.lastValue = value;
    output.dataset.outcome = "ok";
    delete output.dataset.code;
    output.replaceChildren(h("pre", {}, json(value)), ...notes.map((n) => h("p", { class: "muted" }, n)));
  } catch (error) {
    row.lastValue = undefined;
    output.dataset.outcome = "error";
    output.dataset.code = (error && error.code) || "unknown";
    output.replaceChildren(h("p", { class: "error" }, describeError(error)));
  } finally {
    await ctx.after(method.name); // the page shows what the call changed
    output.dataset.state = "done";
    output.dataset.runs = String(Number(output.dataset.runs) + 1);
  }
}

/** After the selection changed: pre-filled inputs the user left alone follow it. */
export function updatePrefills(rows, ctx) {
  for (const row of rows.values()) {
    for (const { param, input } of row.fields) {
      if (input.value !== input.dataset.prefilled) continue;
      fill(input, prefillOf(param, row.call, ctx));
    }
  }
}

function fill(input, prefill) {
  input.value = prefill === null || prefill === undefined ? "" : JSON.stringify(prefill);
  input.dataset.prefilled = input.value;
}
