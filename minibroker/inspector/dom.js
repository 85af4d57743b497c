// Building the page: every piece of data becomes a text node (never markup), so no key, value, header or id can
// inject HTML or script whatever it holds. Formatting of numbers, sizes, times and record bytes lives here too.

const lastRendered = new WeakMap();

// An element with attributes (class, href, ... set as attributes; "on*" functions as listeners) and children
// (strings become text nodes; null and false are skipped; arrays are flattened).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "value") el.value = value;
    else if (name === "checked") el.checked = Boolean(value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces el's children with build()'s, but only when value differs from what el shows: a poll that brings
// nothing new leaves the page (and what the user is pointing at) as it is.
export function update(el, value, build) {
  const key = JSON.stringify(value);
  if (lastRendered.get(el) === key) return;
  lastRendered.set(el, key);
  el.replaceChildren(...[build()].flat().filter((node) => node !== null && node !== undefined));
}

// A path inside the inspector, its segments percent-encoded (ids may hold "/", "?", "#" or anything else).
export function path(...segments) {
  return "/" + segments.map((segment) => encodeURIComponent(String(segment))).join("/");
}

export function link(href, ...children) {
  return h("a", { href }, ...children);
}

export function table(headers, rows, attrs = {}) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, class: "empty" }, "none"))));
}

// Table cells: a <td> is kept, anything else is wrapped in one.
export function cells(...contents) {
  return contents.map((content) => (content instanceof Node && content.tagName === "TD" ? content : h("td", {}, content)));
}

export function row(...contents) {
  return h("tr", {}, cells(...contents));
}

export function num(value) {
  return h("td", { class: "num" }, value === null || value === undefined ? "–" : formatNumber(value));
}

// A definition list of [label, value] pairs: the summary at the top of a view.
export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.map(([label, value]) => h("div", {}, h("dt", {}, label), h("dd", {}, value))));
}

export function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}`.trim() }, text);
}

export function section(title, ...children) {
  return h("section", {}, h("h2", {}, title), ...children);
}

export function formatNumber(value) {
  return typeof value === "number" ? value.toLocaleString("en-US") : String(value);
}

export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = bytes;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${size.toFixed(1)} ${units[unit]}`;
}

export function formatTime(ms) {
  if (ms === null || ms === undefined || ms < 0) return "–";
  return new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC");
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${ms} ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${(ms / 1000).toFixed(1)} s`;
  const parts = [[Math.floor(seconds / 86400), "d"], [Math.floor(seconds / 3600) % 24, "h"],
    [Math.floor(seconds / 60) % 60, "min"], [seconds % 60, "s"]];
  return parts.filter(([count]) => count > 0).map(([count, unit]) => `${count} ${unit}`).join(" ");
}

// Bytes from the API come as a string (valid UTF-8) or {"base64": "..."} (anything else).
function isBinary(data) {
  return data !== null && typeof data === "object" && typeof data.base64 === "string";
}

function bytesOf(data) {
  if (isBinary(data)) return Uint8Array.from(atob(data.base64), (char) => char.charCodeAt(0));
  return new TextEncoder().encode(String(data));
}

export function hex(bytes) {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join(" ");
}

// An id or name for display: its text, or its bytes in hex when they are not UTF-8.
export function label(data) {
  return isBinary(data) ? `0x${hex(bytesOf(data)).replaceAll(" ", "")}` : String(data);
}

// A key, value or header value shown as "utf8" text, "json" (pretty when it parses) or "hex"; bytes that are
// not UTF-8 are always hex.
export function showData(data, format = "utf8") {
  if (data === null || data === undefined) return h("span", { class: "null" }, "null");
  if (isBinary(data) || format === "hex") {
    return h("code", { class: "hex" }, hex(bytesOf(data)) || "(empty)", isBinary(data) ? badge("binary") : null);
  }
  if (format === "json") {
    try {
      return h("pre", { class: "json" }, JSON.stringify(JSON.parse(data), null, 2));
    } catch {
      return h("span", { class: "text" }, data, badge("not JSON"));
    }
  }
  return data === "" ? h("span", { class: "null" }, "(empty)") : h("span", { class: "text" }, data);
}

export function formatSelect(value, onchange) {
  return h("select", { class: "format", title: "how values are shown", onchange: (event) => onchange(event.target.value) },
    [["utf8", "UTF-8"], ["json", "JSON"], ["hex", "hex"]].map(([key, text]) =>
      h("option", { value: key, selected: key === value }, text)));
}

// Query parameters of the current URL, and writing them back without a navigation (the view's URL follows
// its state, so a reload or a shared link shows the same thing).
export function query() {
  return new URLSearchParams(location.search);
}

export function setQuery(changes) {
  const params = query();
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "" || value === false) params.delete(name);
    else params.set(name, String(value));
  }
  const search = params.toString();
  history.replaceState(history.state, "", location.pathname + (search ? `?${search}` : ""));
}

// A row of "previous / next" buttons for a paged list; onpage(offset) loads a page.
export function pager(offset, limit, total, onpage) {
  if (total <= limit && offset === 0) return null;
  const last = Math.max(0, Math.floor((total - 1) / limit) * limit);
  const shown = `${formatNumber(Math.min(offset + 1, total))}–${formatNumber(Math.min(offset + limit, total))}`;
  return h("div", { class: "pager" },
    h("button", { type: "button", disabled: offset <= 0, onclick: () => onpage(Math.max(0, offset - limit)) }, "‹ previous"),
    h("span", {}, `${shown} of ${formatNumber(total)}`),
    h("button", { type: "button", disabled: offset >= last, onclick: () => onpage(Math.min(last, offset + limit)) }, "next ›"));
}
