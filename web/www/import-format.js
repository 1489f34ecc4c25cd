// Tells a Claude Code session log, a Codex rollout and a Spool export apart by the shape
// of their first lines.
// Only a hint for the format picker: parsing itself is the engine's `parseImport`.

/** Returns "claude_code", "codex", "spool", or null when the first lines say none. */
export function detectFormat(text) {
  const lines = text.split("\n", 50);
  for (const line of lines) {
    let record;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    if (!record || typeof record !== "object") continue;
    // A Spool export starts with its header.
    if ("spool_export" in record) return "spool";
    // Codex rollouts wrap every line as { timestamp, type, payload }.
    if ("payload" in record && ["session_meta", "response_item", "event_msg", "turn_context"].includes(record.type)) {
      return "codex";
    }
    // Older Codex rollouts: a header line, `record_type` lines, bare response items.
    if ("record_type" in record || ("instructions" in record && "id" in record)) return "codex";
    if (["function_call", "function_call_output"].includes(record.type)) return "codex";
    // Claude Code lines carry the session id and a message (or a summary) per line.
    if ("sessionId" in record || (record.type === "summary" && "leafUuid" in record)) {
      return "claude_code";
    }
  }
  return null;
}
