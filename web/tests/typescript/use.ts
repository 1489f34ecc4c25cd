// Type-checked against the browser package's declarations by `cargo xtask test`
// (`tsc --strict`): the table methods take their call's `CallArgs` and resolve to its
// result type, so what a caller gets wrong here is a compile error, not a rejection.
import init, { Spool, SpoolError, Session, CallArgs, CallResult } from "../../pkg/spool_web.js";

export async function typed(spool: Spool): Promise<number> {
  await init();
  const entry = await spool.appendEntry("default", {
    key: "agent:demo:main",
    request: { role: "user", content: "hi" },
  });
  const id: number = entry.id;
  const session = await spool.getSession("default", { key: "agent:demo:main" });
  const count: number = session === null ? 0 : session.entry_count;
  // Filled in by the shell when absent: `now_ms`, created ids.
  await spool.createSession("default", { key: "agent:demo:other" });
  await spool.branch("default", { parent_key: "agent:demo:main", child_key: "agent:demo:b" });
  // Every field optional: the argument may be left out.
  const progress = await spool.indexBackfill("default");
  const pending: number = progress.pending_entries;
  const args: CallArgs<"read_page"> = { key: "agent:demo:main", request: { limit: 50 } };
  const page: CallResult<"read_page"> = await spool.readPage("default", args);
  // @ts-expect-error: `key` is required
  await spool.appendEntry("default", { request: { role: "user", content: "hi" } });
  // @ts-expect-error: a field the call does not have
  await spool.getSession("default", { key: "k", nope: 1 });
  // @ts-expect-error: the result is an Entry, not a Session
  const wrong: Session = await spool.appendEntry("default", { key: "k", request: { role: "user", content: "x" } });
  try {
    await spool.getSession("default", { key: "" });
  } catch (e) {
    const code: string = (e as SpoolError).code;
    return code.length;
  }
  return id + count + pending + page.entries.length;
}
