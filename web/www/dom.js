// The two DOM helpers every module of the page uses.

export const $ = (id) => document.getElementById(id);

/** Creates an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) el.append(child);
  }
  return el;
}

/** Pretty JSON of an engine result (`undefined` — a `void` method — shows as such). */
export function json(value) {
  return value === undefined ? "undefined" : JSON.stringify(value, null, 2);
}

/** "[code] message (reason: …)" of a rejected call: the engine's code, never swallowed. */
export function describeError(error) {
  if (!error) return String(error);
  const code = error.code ? `[${error.code}] ` : "";
  const reason = error.reason ? ` (reason: ${error.reason})` : "";
  return `${code}${error.message || error}${reason}`;
}
