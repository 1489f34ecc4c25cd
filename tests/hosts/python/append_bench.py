"""Appends/s through the component under wasmtime-py, for `cargo xtask bench python`:
the route a Python program has without the package (the component in a third-party
host), beside the package's `SpoolSession`.

    python tests/hosts/python/append_bench.py spool.component.wasm N

N `append_entry` calls of ~100-byte messages, each its own commit, into the in-memory
storage of vectors.py (a dict, no disk: what is measured is the host's crossing, which
costs a Python value per byte of a `list<u8>`). Prints a `peer` line beside the
package's `SpoolSession` on tmpfs (the figure `session_append.py` prints).
"""

import sys
import time

from vectors import Host, MemoryStorage

KEY = "agent:main:bench"


def main():
    if len(sys.argv) != 3:
        print("usage: append_bench.py spool.component.wasm N", file=sys.stderr)
        sys.exit(2)
    n = int(sys.argv[2])
    api = Host(sys.argv[1]).instantiate(MemoryStorage())
    created = api.call("w", {"op": "create_session", "key": KEY, "session_id": "s", "now_ms": 1})
    if created[0] != "ok":
        raise SystemExit(f"create_session: {created}")
    started = time.perf_counter()
    for i in range(n):
        content = f"message {i:06}: the parser drops the last element of a list, fix and test it"
        answer = api.call(
            "w",
            {
                "op": "append_entry",
                "key": KEY,
                "request": {"role": "user" if i % 2 == 0 else "assistant", "content": content},
                "now_ms": 2 + i,
            },
        )
        if answer[0] != "ok":
            raise SystemExit(f"append_entry {i}: {answer}")
    rate = n / (time.perf_counter() - started)
    count = api.call("w", {"op": "count_entries", "key": KEY})
    if count != ("ok", n):
        raise SystemExit(f"count_entries: {count}, expected {n}")
    print(f"wasmtime-py host: {n} append_entry calls into a dict: {rate:.0f} appends/s")
    print(
        f"peer\twasmtime-py host: append_entry, dict storage in memory\t{rate}\tappends/s\t"
        "python: SpoolSession.add_items, tmpfs",
        flush=True,
    )


if __name__ == "__main__":
    main()
