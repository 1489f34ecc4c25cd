// Tells a Claude Code session log from a Codex rollout by the shape of its first lines.
// Only a hint for the format picker: parsing itself is the engine's `parseImport`.

/** Returns "claude_code", "codex", or null when the first lines say neither. */
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
