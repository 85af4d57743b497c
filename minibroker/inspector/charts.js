// Small SVG charts drawn from what successive polls saw: a partition's throughput, a group's lag, a transaction's
// states. Series are kept per key for the page's lifetime, bounded, so a long-open tab stays small.

const SVG = "http://www.w3.org/2000/svg";
const MAX_SAMPLES = 90;
const series = new Map(); // key -> [[time_ms, value], ...]

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.append(typeof child === "string" ? document.createTextNode(child) : child);
  return el;
}

// Adds a sample to the series of key (a repeated poll within 200 ms is not a new sample); returns the series.
export function sample(key, value, now = Date.now()) {
  const samples = series.get(key) ?? [];
  const last = samples[samples.length - 1];
  if (last && now - last[0] < 200) last[1] = value;
  else samples.push([now, value]);
  if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES);
  series.set(key, samples);
  return samples;
}

// Per-second rates between successive samples of a counter.
export function rates(samples) {
  const out = [];
  for (let i = 1; i < samples.length; i += 1) {
    const seconds = (samples[i][0] - samples[i - 1][0]) / 1000;
    out.push(seconds > 0 ? Math.max(0, samples[i][1] - samples[i - 1][1]) / seconds : 0);
  }
  return out;
}

function points(values, width, height, max) {
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values.map((value, i) => `${(i * step).toFixed(1)},${(height - 1 - (value / max) * (height - 2)).toFixed(1)}`)
    .join(" ");
}

// A line without axes, for a table cell: the shape of the last minute or so.
export function sparkline(values, title, width = 120, height = 22) {
  const max = Math.max(1, ...values);
  return svg("svg", { class: "spark", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" },
    svg("title", {}, title),
    svg("polyline", { points: points(values.length ? values : [0], width, height, max) }));
}

// Lines over time with a y scale and a legend: named [[time_ms, value], ...] series (at most 8 lines drawn).
export function lineChart(named, { width = 640, height = 160, unit = "" } = {}) {
  const entries = Object.entries(named).slice(0, 8);
  const all = entries.flatMap(([, samples]) => samples);
  const max = Math.max(1, ...all.map(([, value]) => value));
  const start = Math.min(...all.map(([time]) => time));
  const span = Math.max(1, Math.max(...all.map(([time]) => time)) - start);
  const left = 48;
  const plotWidth = width - left - 4;
  const chart = svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" },
    svg("title", {}, `${entries.map(([name]) => name).join(", ")} over time`),
    svg("line", { class: "axis", x1: left, y1: 4, x2: left, y2: height - 16 }),
    svg("line", { class: "axis", x1: left, y1: height - 16, x2: width - 4, y2: height - 16 }),
    svg("text", { x: left - 4, y: 12, "text-anchor": "end" }, `${Math.round(max)}${unit}`),
    svg("text", { x: left - 4, y: height - 16, "text-anchor": "end" }, "0"),
    svg("text", { x: width - 4, y: height - 2, "text-anchor": "end" }, `last ${Math.round(span / 1000)} s`));
  entries.forEach(([, samples], i) => {
    const xy = samples.map(([time, value]) =>
      `${(left + ((time - start) / span) * plotWidth).toFixed(1)},${(height - 16 - (value / max) * (height - 22)).toFixed(1)}`);
    chart.append(svg("polyline", { class: `line s${i}`, points: xy.join(" ") }));
  });
  return chart;
}

export function legend(names) {
  const list = document.createElement("ul");
  list.className = "legend";
  names.slice(0, 8).forEach((name, i) => {
    const item = document.createElement("li");
    item.className = `s${i}`;
    item.textContent = name;
    list.append(item);
  });
  return list;
}

// The states a transactional id went through, one step each, in order, with the time since the first:
// [[time_ms, state], ...]. Steps, not a time scale: a transaction's steps take milliseconds, the gaps minutes.
export function stateStrip(changes, stepWidth = 120, height = 40) {
  const width = Math.max(1, changes.length) * stepWidth;
  const strip = svg("svg", { class: "strip", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" },
    svg("title", {}, "the states in order"));
  const start = changes.length ? changes[0][0] : 0;
  changes.forEach(([time, state], i) => {
    const x = i * stepWidth;
    strip.append(svg("rect", { class: `state ${state}`, x: x + 1, y: 0, width: stepWidth - 2, height }),
      svg("text", { x: x + 6, y: 16 }, state),
      svg("text", { x: x + 6, y: 32, class: "since" }, `+${time - start} ms`));
  });
  return strip;
}

// A bar for a table cell: share (0..1) of the cell's width.
export function bar(share, width = 60, height = 8) {
  return svg("svg", { class: "bar", width, height, viewBox: `0 0 ${width} ${height}` },
    svg("rect", { width: Math.max(1, Math.round(share * width)), height }));
}
