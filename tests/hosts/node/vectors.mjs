// The scenario vectors (tests/vectors/*.json) run through the component transpiled by jco,
// in Node, against an in-memory storage written here: the component proven in a host
// that is not Spool's own.
//
//   node tests/hosts/node/vectors.mjs OUT_DIR VECTORS
//
// OUT_DIR holds `jco transpile spool.component.wasm --instantiation async -o OUT_DIR`;
// VECTORS is the file tests/hosts.rs writes (below). `cargo xtask test-hosts` runs it.
// Prints one `test result: ok. N passed; M failed` line (the line `cargo xtask test`
// counts); exits 1 when a vector fails.
//
// A vector's call is a `spool::Command` in the core's JSON; it reaches the component's
// typed export through the WIT (wit/spool.wit, parsed below): each parameter converts by
// its WIT type (records field by field, `u64` as BigInt, enums by case name, options as
// `undefined`, a variant's case from the field `variant_tags` names). The answer converts back the same way, then matches the vector's subset
// as tests/vectors/mod.rs matches it; a WIT `string` carrying JSON text (tool calls,
// metadata) is compared as the JSON it holds when the vector expects JSON, not text.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");

// The vectors as tests/hosts.rs writes them (`SPOOL_HOST_VECTORS=PATH cargo test -p
// spool --test suite hosts::`): every call as the core reads it (each default spelled
// out), and `variant_tags`: the field the core's JSON names each WIT variant's case in
// (the WIT tags a variant outside its payload, the core's JSON inside the object).
const HOST_VECTORS = process.argv[3]
  ? JSON.parse(readFileSync(process.argv[3], "utf8"))
  : { vectors: [], variant_tags: {} };
const VECTORS = HOST_VECTORS.vectors;
const VARIANT_TAGS = HOST_VECTORS.variant_tags;

// ---------------------------------------------------------------- the WIT, parsed

/** Tokens of a WIT text, comments dropped. */
function tokens(text) {
  const out = [];
  const re = /\/\/[^\n]*|\s+|(->|[{}()<>,:;=.@/*_]|[A-Za-z0-9%-]+)/g;
  let m;
  while ((m = re.exec(text))) {
    if (m[1] !== undefined) out.push(m[1]);
  }
  return out;
}

/** The WIT's named types (`{kind, …}` by name) and the functions of each interface. */
export function parseWit(text) {
  const t = tokens(text);
  let i = 0;
  const peek = () => t[i];
  const next = () => t[i++];
  const expect = (tok) => {
    if (t[i] !== tok) throw new Error(`WIT: expected ${tok} at token ${i}, got ${t[i]}`);
    i++;
  };
  const types = {};
  const interfaces = {};
  function type() {
    const name = next();
    if (["list", "option", "tuple", "result"].includes(name) && peek() === "<") {
      next();
      const args = [];
      while (peek() !== ">") {
        if (peek() === "_") {
          next();
          args.push(null);
        } else {
          args.push(type());
        }
        if (peek() === ",") next();
      }
      expect(">");
      return { kind: name, args };
    }
    if (name === "result") return { kind: "result", args: [null, null] };
    return { kind: "name", name };
  }
  function cases(withTypes) {
    expect("{");
    const out = [];
    while (peek() !== "}") {
      const name = next();
      let ty = null;
      if (withTypes === "record") {
        expect(":");
        ty = type();
      } else if (withTypes === "variant" && peek() === "(") {
        next();
        ty = type();
        expect(")");
      }
      out.push([name, ty]);
      if (peek() === ",") next();
    }
    expect("}");
    return out;
  }
  while (i < t.length) {
    const word = next();
    if (word === "package") {
      while (next() !== ";");
    } else if (word === "world") {
      next();
      expect("{");
      while (next() !== "}");
    } else if (word === "interface") {
      const iface = next();
      const funcs = (interfaces[iface] = {});
      expect("{");
      while (peek() !== "}") {
        const item = next();
        if (item === "use") {
          while (next() !== ";");
        } else if (item === "type") {
          const name = next();
          expect("=");
          types[name] = { kind: "alias", of: type() };
          expect(";");
        } else if (item === "record" || item === "variant" || item === "enum") {
          const name = next();
          types[name] = { kind: item, cases: cases(item) };
        } else {
          expect(":");
          expect("func");
          expect("(");
          const params = [];
          while (peek() !== ")") {
            const p = next();
            expect(":");
            params.push([p, type()]);
            if (peek() === ",") next();
          }
          expect(")");
          let result = null;
          if (peek() === "->") {
            next();
            result = type();
          }
          expect(";");
          funcs[item] = { params, result };
        }
      }
      expect("}");
    } else {
      throw new Error(`WIT: unexpected ${word}`);
    }
  }
  return { types, interfaces };
}

// ---------------------------------------------------------------- core JSON ⇄ jco values

const camel = (name) => name.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());
const snake = (name) => name.replace(/-/g, "_");
const kebab = (name) => name.replace(/_/g, "-");

/** A step the runner cannot express through the WIT (not a failure of the component). */
class Unsupported extends Error {}

export function converters(wit, tags = VARIANT_TAGS) {
  const resolve = (ty) => {
    while (ty.kind === "name" && wit.types[ty.name]) {
      const named = wit.types[ty.name];
      if (named.kind !== "alias") return { ...named, name: ty.name };
      ty = named.of;
    }
    return ty;
  };
  function zero(ty) {
    ty = resolve(ty);
    if (ty.kind === "list") return [];
    if (ty.kind === "name" && ty.name === "bool") return false;
    if (ty.kind === "name" && /^[us](8|16|32|64)$|^f(32|64)$/.test(ty.name)) return 0;
    if (ty.kind === "name" && ty.name === "string") return "";
    return null;
  }
  function toWit(ty, value, at) {
    ty = resolve(ty);
    switch (ty.kind) {
      case "option":
        return value === null || value === undefined ? undefined : toWit(ty.args[0], value, at);
      case "list":
        if (!Array.isArray(value)) throw new Unsupported(`${at}: expected a list, got ${JSON.stringify(value)}`);
        if (resolve(ty.args[0]).name === "u8") return Uint8Array.from(value);
        return value.map((v, n) => toWit(ty.args[0], v, `${at}/${n}`));
      case "tuple":
        return ty.args.map((a, n) => toWit(a, value[n], `${at}/${n}`));
      case "record": {
        if (value === null || typeof value !== "object") throw new Unsupported(`${at}: expected an object`);
        const out = {};
        for (const [field, fty] of ty.cases) {
          // The core's JSON leaves out a field at its zero value (0, false, empty).
          const v = value[snake(field)] ?? zero(fty);
          out[camel(field)] = toWit(fty, v, `${at}/${snake(field)}`);
        }
        return out;
      }
      case "enum":
        if (typeof value !== "string") throw new Unsupported(`${at}: expected a case name`);
        return kebab(value);
      case "variant": {
        const field = tags[ty.name]?.field;
        if (!field) throw new Unsupported(`${at}: no tag field for the variant ${ty.name}`);
        if (value === null || typeof value !== "object") throw new Unsupported(`${at}: expected an object`);
        const tag = kebab(String(value[field]));
        const found = ty.cases.find(([c]) => c === tag);
        if (!found) throw new Unsupported(`${at}/${field}: no case ${tag} in ${ty.name}`);
        if (found[1] === null) return { tag };
        const { [field]: _, ...rest } = value;
        return { tag, val: toWit(found[1], rest, at) };
      }
      case "name":
        switch (ty.name) {
          case "u64":
          case "s64":
            if (typeof value !== "number") throw new Unsupported(`${at}: expected a number`);
            return BigInt(value);
          case "string":
            // Free-form JSON crosses as JSON text.
            return typeof value === "string" ? value : JSON.stringify(value);
          case "bool":
          case "u8":
          case "u16":
          case "u32":
          case "s32":
          case "f32":
          case "f64":
            return value;
        }
    }
    throw new Error(`${at}: unknown WIT type ${JSON.stringify(ty)}`);
  }
  function fromWit(ty, value) {
    if (ty === null) return null;
    ty = resolve(ty);
    switch (ty.kind) {
      case "option":
        return value === undefined ? null : fromWit(ty.args[0], value);
      case "list":
        return Array.from(value, (v) => fromWit(ty.args[0], v));
      case "tuple":
        return ty.args.map((a, n) => fromWit(a, value[n]));
      case "record": {
        const out = {};
        for (const [field, fty] of ty.cases) out[snake(field)] = fromWit(fty, value[camel(field)]);
        return out;
      }
      case "enum":
        return snake(value);
      case "variant": {
        // As the core's JSON has it: the case's name in the tag field, beside its fields.
        const [, cty] = ty.cases.find(([c]) => c === value.tag);
        const out = { [tags[ty.name].field]: snake(value.tag) };
        return cty === null ? out : Object.assign(out, fromWit(cty, value.val));
      }
      case "name":
        return typeof value === "bigint" ? Number(value) : value;
    }
    throw new Error(`unknown WIT type ${JSON.stringify(ty)}`);
  }
  return { toWit, fromWit, Unsupported };
}

// ---------------------------------------------------------------- the storage

const compare = (a, b) => {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
};
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const equal = (a, b) => a.length === b.length && compare(a, b) === 0;

/**
 * The storage contract over a Map per workspace: bytewise key order, preconditions
 * checked before any write, a batch all or nothing. `failGets` makes every `get` fail
 * with `backend` (the error case of the import).
 */
export class MemoryStorage {
  constructor() {
    this.spaces = new Map();
    this.failGets = false;
  }
  space(workspace) {
    if (!this.spaces.has(workspace)) this.spaces.set(workspace, new Map());
    return this.spaces.get(workspace);
  }
  sorted(workspace) {
    return [...this.space(workspace).values()].sort((x, y) => compare(x.key, y.key));
  }
  imports() {
    const storage = {
      get: (workspace, key) => {
        if (this.failGets) throw { payload: { tag: "backend", val: "the disk is gone" } };
        const found = this.space(workspace).get(hex(key));
        return { value: found?.value };
      },
      range: (workspace, query) => {
        const { start, end } = query.range;
        let pairs = this.sorted(workspace).filter(
          (kv) => compare(kv.key, start) >= 0 && (end === undefined || compare(kv.key, end) < 0),
        );
        if (query.reverse) pairs.reverse();
        if (query.limit > 0) pairs = pairs.slice(0, query.limit);
        return pairs.map(({ key, value }) => ({ key, value }));
      },
      commit: (workspace, batch) => {
        const space = this.space(workspace);
        batch.preconditions.forEach((p, index) => {
          const held = p.tag === "absent" ? space.get(hex(p.val)) : space.get(hex(p.val.key));
          const holds = p.tag === "absent" ? held === undefined : held !== undefined && equal(held.value, p.val.value);
          if (!holds) throw { payload: { tag: "conflict", val: index } };
        });
        const next = new Map(space);
        for (const m of batch.mutations) {
          if (m.tag === "put") next.set(hex(m.val.key), { key: Uint8Array.from(m.val.key), value: Uint8Array.from(m.val.value) });
          else if (m.tag === "delete") next.delete(hex(m.val));
          else
            for (const [k, kv] of next)
              if (compare(kv.key, m.val.start) >= 0 && (m.val.end === undefined || compare(kv.key, m.val.end) < 0)) next.delete(k);
        }
        this.spaces.set(workspace, next);
      },
    };
    this.archives = [];
    let open = null;
    const archive = {
      beginResetArchive: (workspace, head) => {
        open = { workspace, head, entries: [] };
      },
      appendResetArchive: (workspace, entries) => {
        open.entries.push(...JSON.parse(entries));
      },
      finishResetArchive: (workspace, summaries) => {
        this.archives.push({ ...open, summaries: JSON.parse(summaries) });
        open = null;
      },
    };
    const progress = { report: () => {} };
    // jco's generated code looks each import up without the package version; its
    // `.d.ts` names them with it: pass both.
    const imports = {};
    for (const [name, value] of [["storage", storage], ["archive", archive], ["progress", progress]]) {
      imports[`spool:engine/${name}`] = value;
      imports[`spool:engine/${name}@0.1.0`] = value;
    }
    return imports;
  }
}

// ---------------------------------------------------------------- the runner

const compiled = new Map();

/** A fresh instance over `storage` (each core module compiled once). */
export async function instantiate(outDir, storage) {
  const { instantiate } = await import(pathToFileURL(join(outDir, "spool.component.js")).href);
  const compile = (name) => {
    if (!compiled.has(name)) compiled.set(name, WebAssembly.compile(readFileSync(join(outDir, name))));
    return compiled.get(name);
  };
  const root = await instantiate(compile, storage.imports());
  return root.api;
}

function substitute(value, saved) {
  if (typeof value === "string" && value.startsWith("$")) {
    if (!(value.slice(1) in saved)) throw new Error(`nothing saved under \`${value.slice(1)}\``);
    return saved[value.slice(1)];
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, saved));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, saved)]));
  return value;
}

/**
 * The record inside `have` holding `key`: the core's JSON flattens some records into
 * their parent (`branch-info` is a session's fields and its lineage's), the WIT nests them.
 */
function flattened(have, key) {
  for (const v of Object.values(have)) {
    if (!v || typeof v !== "object" || Array.isArray(v)) continue;
    if (key in v) return v;
    const deeper = flattened(v, key);
    if (deeper) return deeper;
  }
  return undefined;
}

/**
 * Whether `have` matches the subset `want` (tests/vectors/mod.rs's `matches`), with two
 * allowances for what the WIT carries differently: JSON text where the vector expects
 * JSON, and a flattened record's fields in the record that holds them.
 */
export function matches(want, have, path = "") {
  if (typeof have === "string" && want !== null && typeof want !== "string") {
    try {
      have = JSON.parse(have);
    } catch {
      throw new Error(`${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(have)}`);
    }
  }
  if (Array.isArray(want) && Array.isArray(have)) {
    if (want.length !== have.length)
      throw new Error(`${path}: expected ${want.length} items, got ${have.length}: ${JSON.stringify(have)}`);
    want.forEach((w, n) => matches(w, have[n], `${path}/${n}`));
    return;
  }
  if (want && typeof want === "object" && !Array.isArray(want) && have && typeof have === "object" && !Array.isArray(have)) {
    for (const [k, v] of Object.entries(want)) {
      if (k in have) matches(v, have[k], `${path}/${k}`);
      else if (flattened(have, k)) matches(v, flattened(have, k)[k], `${path}/${k}`);
      else if (v !== null) throw new Error(`${path}/${k}: missing, expected ${JSON.stringify(v)}`);
    }
    return;
  }
  if (want === have) return;
  throw new Error(`${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(have)}`);
}

/** Calls `command` (core JSON) through its typed export; `{ok}` or `{error: {code, message}}`. */
export function call(api, wit, conv, workspace, command) {
  const { op, ...args } = command;
  const fn = wit.interfaces.api[kebab(op)];
  if (!fn) throw new Error(`no export for op ${op}`);
  const params = fn.params.map(([p, ty]) =>
    p === "workspace" ? workspace : conv.toWit(ty, args[snake(p)], snake(p)),
  );
  try {
    const ok = api[camel(kebab(op))](...params);
    return { ok: conv.fromWit(fn.result.args[0], ok) };
  } catch (e) {
    if (e && e.payload && typeof e.payload.code === "string")
      return { error: { code: snake(e.payload.code), message: e.payload.message } };
    throw e;
  }
}

export async function runVector(outDir, wit, conv, vector) {
  const api = await instantiate(outDir, new MemoryStorage());
  const saved = {};
  vector.steps.forEach((step, index) => {
    const at = `${vector.name} step ${index}`;
    const command = substitute(step.call, saved);
    const outcome = call(api, wit, conv, step.workspace ?? "default", command);
    const expect = step.expect;
    if ("ok" in expect) {
      if (outcome.error)
        throw new Error(`${at}: expected ok, got ${outcome.error.code} (${outcome.error.message})`);
      try {
        matches(expect.ok, outcome.ok);
      } catch (e) {
        throw new Error(`${at} (${JSON.stringify(command)}): ${e.message}`);
      }
      for (const [name, pointer] of Object.entries(step.save ?? {})) {
        let value = outcome.ok;
        for (const part of pointer.split("/").slice(1)) value = value?.[part];
        if (value === undefined) throw new Error(`${at}: nothing at ${pointer}`);
        saved[name] = value;
      }
    } else {
      const spec = typeof expect.error === "string" ? { code: expect.error } : expect.error;
      if (!outcome.error) throw new Error(`${at}: expected error ${spec.code}, got ok ${JSON.stringify(outcome.ok)}`);
      if (outcome.error.code !== spec.code)
        throw new Error(`${at}: expected error ${spec.code}, got ${outcome.error.code} (${outcome.error.message})`);
      if (spec.message_contains && !outcome.error.message.includes(spec.message_contains))
        throw new Error(`${at}: error message ${JSON.stringify(outcome.error.message)} lacks ${JSON.stringify(spec.message_contains)}`);
    }
  });
}

async function main() {
  const outDir = process.argv[2];
  if (!outDir || !process.argv[3]) {
    console.error("usage: node tests/hosts/node/vectors.mjs OUT_DIR VECTORS (jco transpile's output, the host vectors)");
    process.exit(2);
  }
  const wit = parseWit(readFileSync(join(root, "wit/spool.wit"), "utf8"));
  const conv = converters(wit);
  let passed = 0;
  let failed = 0;
  if (VECTORS.length === 0) throw new Error(`${process.argv[3]} lists no vector`);
  for (const { vector } of VECTORS) {
    try {
      await runVector(outDir, wit, conv, vector);
      passed++;
      console.log(`test ${vector.name} ... ok`);
    } catch (e) {
      failed++;
      console.log(`test ${vector.name} ... FAILED\n  ${e.message}`);
    }
  }
  for (const test of await extraTests(outDir, wit, conv)) {
    try {
      await test.run();
      passed++;
      console.log(`test ${test.name} ... ok`);
    } catch (e) {
      failed++;
      console.log(`test ${test.name} ... FAILED\n  ${e.message}`);
    }
  }
  console.log(`test result: ${failed ? "FAILED" : "ok"}. ${passed} passed; ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

/** What the vectors cannot say: how the component answers a storage that fails. */
async function extraTests(outDir, wit, conv) {
  return [
    {
      name: "test_failing_get_is_a_typed_storage_error",
      async run() {
        const storage = new MemoryStorage();
        const api = await instantiate(outDir, storage);
        const create = { op: "create_session", key: "agent:main:main", session_id: "s-1", now_ms: 1 };
        const made = call(api, wit, conv, "default", create);
        if (!made.ok) throw new Error(`create failed: ${JSON.stringify(made)}`);
        storage.failGets = true;
        const read = call(api, wit, conv, "default", { op: "get_session", key: "agent:main:main" });
        if (!read.error || read.error.code !== "storage" || !read.error.message.includes("the disk is gone"))
          throw new Error(`expected a storage error naming the cause, got ${JSON.stringify(read)}`);
        // The instance is not poisoned: the next call, the storage healed, answers.
        storage.failGets = false;
        const again = call(api, wit, conv, "default", { op: "get_session", key: "agent:main:main" });
        if (!again.ok || again.ok.session_id !== "s-1") throw new Error(`after the failure: ${JSON.stringify(again)}`);
      },
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
