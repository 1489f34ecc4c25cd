"""The scenario vectors run through the component under wasmtime-py, against a storage
written here (a dict per workspace, keys kept sorted): the component proven in a host
that is not Spool's own.

    python tests/hosts/python/vectors.py spool.component.wasm VECTORS

Runs the vectors the file VECTORS holds (written by the core's tests/hosts.rs with
`SPOOL_HOST_VECTORS=VECTORS cargo test -p spool --test suite hosts::`: every call as the
core reads it; `cargo xtask test-hosts` does both), plus what the vectors cannot say: a `get` that fails
comes back as a typed `storage` error, not a trap. Prints one
`test result: ok. N passed; M failed` line (what `cargo xtask test` counts); exits 1
when a test fails.

A vector's call is a `spool::Command` in the core's JSON; each parameter of its typed
export converts by the WIT type wasmtime-py reports for it (records field by field,
enums by case name, options as None, a variant's case from the field `variant_tags`
names), and the answer converts back the same way before
it matches the vector's subset as tests/vectors/mod.rs matches it. A WIT `string`
carrying JSON text is compared as the JSON it holds when the vector expects JSON, and a
record the core's JSON flattens into its parent (`branch-info`) is matched where the
WIT nests it.
"""

import bisect
import json
import sys
import time
from pathlib import Path

from wasmtime import Config, Engine, Store
from wasmtime.component import (
    F32,
    F64,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    Component,
    EnumType,
    ListType,
    Linker,
    OptionType,
    Record,
    RecordType,
    String,
    TupleType,
    Variant,
    VariantType,
)

ROOT = Path(__file__).resolve().parents[3]
VERSION = "0.1.0"
API = f"spool:engine/api@{VERSION}"

INTS = (U8, U16, U32, U64, S8, S16, S32, S64)
FLOATS = (F32, F64)


def kebab(name):
    return name.replace("_", "-")


def snake(name):
    return name.replace("-", "_")


class Unsupported(Exception):
    """A value the runner cannot express through the WIT (not the component's fault)."""


# ---------------------------------------------------------------- core JSON <-> WIT values

# The field the core's JSON names each WIT variant's case in (the WIT tags a variant
# outside its payload, the core's JSON inside the object), with its cases: set by main.
VARIANT_TAGS = {}


def variant_field(ty):
    """The tag field of the variant `ty`, known by its cases (wasmtime-py gives no name)."""
    names = [name for name, _ in ty.cases]
    for tag in VARIANT_TAGS.values():
        if tag["cases"] == names:
            return tag["field"]
    raise Unsupported(f"no tag field for the variant with cases {sorted(names)}")


def zero(ty):
    """What the core's JSON leaves out: a field at its zero value (0, false, empty)."""
    if isinstance(ty, ListType):
        return b"" if ty._is_bytes() else []
    if isinstance(ty, Bool):
        return False
    if isinstance(ty, INTS + FLOATS):
        return 0
    if isinstance(ty, String):
        return ""
    return None


def to_wit(ty, value, at):
    if isinstance(ty, OptionType):
        return None if value is None else to_wit(ty.payload, value, at)
    if isinstance(ty, ListType):
        if not isinstance(value, list):
            raise Unsupported(f"{at}: expected a list, got {value!r}")
        if ty._is_bytes():
            return bytes(value)
        return [to_wit(ty.element, v, f"{at}/{n}") for n, v in enumerate(value)]
    if isinstance(ty, TupleType):
        return tuple(to_wit(t, value[n], f"{at}/{n}") for n, t in enumerate(ty.elements))
    if isinstance(ty, RecordType):
        if not isinstance(value, dict):
            raise Unsupported(f"{at}: expected an object, got {value!r}")
        record = Record()
        for field, fty in ty.fields:
            v = value.get(snake(field))
            setattr(record, field, to_wit(fty, zero(fty) if v is None else v, f"{at}/{snake(field)}"))
        return record
    if isinstance(ty, EnumType):
        if not isinstance(value, str):
            raise Unsupported(f"{at}: expected a case name, got {value!r}")
        return kebab(value)
    if isinstance(ty, VariantType):
        # The core's JSON names the case in a field of the object (VARIANT_TAGS).
        field, cases = variant_field(ty), dict(ty.cases)
        if not isinstance(value, dict) or kebab(str(value.get(field))) not in cases:
            raise Unsupported(f"{at}: expected an object naming a case in `{field}`, got {value!r}")
        tag = kebab(value[field])
        if cases[tag] is None:
            return Variant(tag)
        rest = {k: v for k, v in value.items() if k != field}
        return Variant(tag, to_wit(cases[tag], rest, at))
    if isinstance(ty, String):
        # Free-form JSON crosses as JSON text.
        return value if isinstance(value, str) else json.dumps(value)
    if isinstance(ty, INTS + FLOATS + (Bool,)):
        return value
    raise Unsupported(f"{at}: WIT type {ty!r}")


def from_wit(ty, value):
    if ty is None:
        return None
    if isinstance(ty, OptionType):
        return None if value is None else from_wit(ty.payload, value)
    if isinstance(ty, ListType):
        if ty._is_bytes():
            return list(value)
        return [from_wit(ty.element, v) for v in value]
    if isinstance(ty, TupleType):
        return [from_wit(t, v) for t, v in zip(ty.elements, value)]
    if isinstance(ty, RecordType):
        return {snake(f): from_wit(fty, getattr(value, f)) for f, fty in ty.fields}
    if isinstance(ty, EnumType):
        return snake(value)
    if isinstance(ty, VariantType):
        # As the core's JSON has it: the case's name in the tag field, beside its fields.
        out = {variant_field(ty): snake(value.tag)}
        payload = dict(ty.cases)[value.tag]
        if payload is not None:
            out.update(from_wit(payload, value.payload))
        return out
    return value


def answer(ty, value):
    """An export's `result<T, error>` as ("ok", T) or ("err", error record)."""
    if isinstance(value, Variant):
        return value.tag, value.payload
    # Untagged (the cases differ in Python type): the error is the `error` record.
    err = ty.err
    if isinstance(value, Record) and isinstance(err, RecordType) and not isinstance(ty.ok, RecordType):
        return "err", value
    return "ok", value


# ---------------------------------------------------------------- the storage


class MemoryStorage:
    """The storage contract over a dict per workspace, its keys kept sorted: bytewise
    order, preconditions checked before any write, a batch all or nothing.
    `fail_gets` makes every `get` fail with `backend` (the error case of the import)."""

    def __init__(self):
        self.spaces = {}
        self.fail_gets = False
        self.archives = []
        self._open = None
        self.gets = 0

    def space(self, workspace):
        return self.spaces.setdefault(workspace, ({}, []))

    def get(self, store, workspace, key):
        self.gets += 1
        if self.fail_gets:
            return Variant("backend", "the disk is gone")
        values, _ = self.space(workspace)
        found = Record()
        found.value = values.get(bytes(key))
        return found

    def range(self, store, workspace, query):
        values, keys = self.space(workspace)
        start, end = bytes(query.range.start), query.range.end
        lo = bisect.bisect_left(keys, start)
        hi = len(keys) if end is None else bisect.bisect_left(keys, bytes(end))
        chosen = keys[lo:hi]
        if query.reverse:
            chosen = chosen[::-1]
        if query.limit:
            chosen = chosen[: query.limit]
        pairs = []
        for k in chosen:
            kv = Record()
            kv.key, kv.value = k, values[k]
            pairs.append(kv)
        return pairs

    def commit(self, store, workspace, batch):
        values, keys = self.space(workspace)
        for index, p in enumerate(batch.preconditions):
            # wasmtime-py hands a variant whose cases differ in Python type untagged:
            # `absent` as the key's bytes, `equals` as the kv record.
            if isinstance(p, Variant):
                raise TypeError(f"a precondition came tagged: {p!r}")
            if isinstance(p, bytes):
                holds = p not in values
            else:
                holds = values.get(bytes(p.key)) == bytes(p.value)
            if not holds:
                return Variant("conflict", index)
        values, keys = dict(values), list(keys)
        for m in batch.mutations:
            if m.tag == "put":
                k = bytes(m.payload.key)
                if k not in values:
                    bisect.insort(keys, k)
                values[k] = bytes(m.payload.value)
            elif m.tag == "delete":
                k = bytes(m.payload)
                if k in values:
                    del values[k]
                    keys.remove(k)
            else:
                start, end = bytes(m.payload.start), m.payload.end
                lo = bisect.bisect_left(keys, start)
                hi = len(keys) if end is None else bisect.bisect_left(keys, bytes(end))
                for k in keys[lo:hi]:
                    del values[k]
                del keys[lo:hi]
        self.spaces[workspace] = (values, keys)
        return None

    def begin_reset_archive(self, store, workspace, head):
        self._open = {"workspace": workspace, "session_key": head.__dict__["session-key"], "entries": []}
        return None

    def append_reset_archive(self, store, workspace, entries):
        self._open["entries"].extend(json.loads(entries))
        return None

    def finish_reset_archive(self, store, workspace, summaries):
        self._open["summaries"] = json.loads(summaries)
        self.archives.append(self._open)
        self._open = None
        return None


# ---------------------------------------------------------------- the runner


class Host:
    """One component, compiled once; `instantiate` links a fresh instance to a storage."""

    def __init__(self, path):
        self.engine = Engine(Config())
        self.component = Component.from_file(self.engine, path)

    def instantiate(self, storage):
        linker = Linker(self.engine)
        with linker.root() as root:
            with root.add_instance(f"spool:engine/storage@{VERSION}") as i:
                i.add_func("get", storage.get)
                i.add_func("range", storage.range)
                i.add_func("commit", storage.commit)
            with root.add_instance(f"spool:engine/archive@{VERSION}") as i:
                i.add_func("begin-reset-archive", storage.begin_reset_archive)
                i.add_func("append-reset-archive", storage.append_reset_archive)
                i.add_func("finish-reset-archive", storage.finish_reset_archive)
            with root.add_instance(f"spool:engine/progress@{VERSION}") as i:
                i.add_func("report", lambda store, workspace, phase, done, total: None)
        store = Store(self.engine)
        instance = linker.instantiate(store, self.component)
        return Api(store, instance)


class Api:
    def __init__(self, store, instance):
        self.store = store
        self.instance = instance
        self.api = instance.get_export_index(store, API)
        self.funcs = {}

    def call(self, workspace, command):
        """`command` (core JSON) through its typed export: ("ok", json) or ("err", code, message)."""
        command = dict(command)
        op = command.pop("op")
        name = kebab(op)
        if name not in self.funcs:
            index = self.instance.get_export_index(self.store, name, self.api)
            if index is None:
                raise Unsupported(f"no export `{name}`")
            func = self.instance.get_func(self.store, index)
            self.funcs[name] = (func, func.type(self.store))
        func, fty = self.funcs[name]
        params = [
            workspace if p == "workspace" else to_wit(ty, command.get(snake(p)), snake(p))
            for p, ty in fty.params
        ]
        result = func(self.store, *params)
        tag, payload = answer(fty.result, result)
        if tag == "ok":
            return "ok", from_wit(fty.result.ok, payload)
        return "err", snake(payload.code), payload.message


def substitute(value, saved):
    if isinstance(value, str) and value.startswith("$"):
        if value[1:] not in saved:
            raise AssertionError(f"nothing saved under `{value[1:]}`")
        return saved[value[1:]]
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, saved) for k, v in value.items()}
    return value


def flattened(have, key):
    """The record inside `have` holding `key` (see the module documentation)."""
    for v in have.values():
        if isinstance(v, dict):
            if key in v:
                return v
            deeper = flattened(v, key)
            if deeper is not None:
                return deeper
    return None


def matches(want, have, path=""):
    """Whether `have` matches the subset `want` (tests/vectors/mod.rs's `matches`)."""
    if isinstance(have, str) and want is not None and not isinstance(want, str):
        try:
            have = json.loads(have)
        except ValueError:
            raise AssertionError(f"{path}: expected {want!r}, got {have!r}")
    if isinstance(want, dict) and isinstance(have, dict):
        for k, v in want.items():
            if k in have:
                matches(v, have[k], f"{path}/{k}")
            elif flattened(have, k) is not None:
                matches(v, flattened(have, k)[k], f"{path}/{k}")
            elif v is not None:
                raise AssertionError(f"{path}/{k}: missing, expected {v!r}")
        return
    if isinstance(want, list) and isinstance(have, list):
        if len(want) != len(have):
            raise AssertionError(f"{path}: expected {len(want)} items, got {len(have)}: {have!r}")
        for n, (w, h) in enumerate(zip(want, have)):
            matches(w, h, f"{path}/{n}")
        return
    if isinstance(want, bool) or isinstance(have, bool):
        ok = want is have
    elif isinstance(want, (int, float)) and isinstance(have, (int, float)):
        ok = float(want) == float(have)
    else:
        ok = want == have
    if not ok:
        raise AssertionError(f"{path}: expected {want!r}, got {have!r}")


def run_vector(host, vector):
    api = host.instantiate(MemoryStorage())
    saved = {}
    for index, step in enumerate(vector["steps"]):
        at = f"{vector['name']} step {index}"
        command = substitute(step["call"], saved)
        outcome = api.call(step.get("workspace", "default"), command)
        expect = step["expect"]
        if "ok" in expect:
            if outcome[0] != "ok":
                raise AssertionError(f"{at}: expected ok, got {outcome[1]} ({outcome[2]})")
            try:
                matches(expect["ok"], outcome[1])
            except AssertionError as e:
                raise AssertionError(f"{at} ({json.dumps(command)}): {e}")
            for name, pointer in step.get("save", {}).items():
                value = outcome[1]
                for part in pointer.split("/")[1:]:
                    value = value[int(part)] if isinstance(value, list) else value.get(part)
                if value is None:
                    raise AssertionError(f"{at}: nothing at {pointer}")
                saved[name] = value
        else:
            spec = expect["error"]
            spec = {"code": spec} if isinstance(spec, str) else spec
            if outcome[0] != "err":
                raise AssertionError(f"{at}: expected error {spec['code']}, got ok {outcome[1]!r}")
            if outcome[1] != spec["code"]:
                raise AssertionError(f"{at}: expected error {spec['code']}, got {outcome[1]} ({outcome[2]})")
            if spec.get("message_contains", "") not in outcome[2]:
                raise AssertionError(f"{at}: error message {outcome[2]!r} lacks {spec['message_contains']!r}")


def test_failing_get_is_a_typed_storage_error(host):
    storage = MemoryStorage()
    api = host.instantiate(storage)
    made = api.call("default", {"op": "create_session", "key": "agent:main:main", "session_id": "s-1", "now_ms": 1})
    assert made[0] == "ok", made
    storage.fail_gets = True
    gets = storage.gets
    read = api.call("default", {"op": "get_session", "key": "agent:main:main"})
    assert storage.gets > gets, "get_session read through get"
    assert read[0] == "err" and read[1] == "storage" and "the disk is gone" in read[2], read
    # The instance is not poisoned: the storage healed, the next call answers.
    storage.fail_gets = False
    again = api.call("default", {"op": "get_session", "key": "agent:main:main"})
    assert again[0] == "ok" and again[1]["session_id"] == "s-1", again


def main():
    if len(sys.argv) != 3:
        print("usage: vectors.py spool.component.wasm VECTORS", file=sys.stderr)
        sys.exit(2)
    host = Host(sys.argv[1])
    data = json.loads(Path(sys.argv[2]).read_text())
    VARIANT_TAGS.update(data["variant_tags"])
    vectors = data["vectors"]
    if not vectors:
        raise SystemExit(f"{sys.argv[2]} lists no vector")
    tests = [(v["vector"]["name"], lambda v=v: run_vector(host, v["vector"])) for v in vectors]
    tests.append(("test_failing_get_is_a_typed_storage_error", lambda: test_failing_get_is_a_typed_storage_error(host)))
    passed = failed = 0
    started = time.monotonic()
    for name, test in tests:
        try:
            test()
            passed += 1
            print(f"test {name} ... ok", flush=True)
        except Exception as e:  # a failure of any kind is this test's, reported with its cause
            failed += 1
            print(f"test {name} ... FAILED\n  {type(e).__name__}: {e}", flush=True)
    elapsed = time.monotonic() - started
    print(f"test result: {'FAILED' if failed else 'ok'}. {passed} passed; {failed} failed; finished in {elapsed:.2f}s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
