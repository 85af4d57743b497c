// The message browser of a partition: 50 records a page from an offset or a timestamp, each batch with its codec,
// producer and flags, COMMIT/ABORT markers inline, records of aborted transactions marked, values cut at 1 KiB
// with a link to the whole value (/topics/{t}/{p}/records/{offset}), and a range download as JSONL.

import { api, download } from "./api.js";
import {
  badge, facts, formatBytes, formatNumber, formatSelect, formatTime, h, label, link, path, query, section, setQuery, showData,
  table, update,
} from "./dom.js";

const RECORDS_PER_PAGE = 50;
const VALUE_CUT_BYTES = 1024;

function recordsUrl(topic, partition) {
  return `/v1/partitions/${encodeURIComponent(topic)}/${partition}/records`;
}

// "1700000000000" (epoch ms) or any date Date.parse reads ("2026-01-02T03:04:05Z"); NaN otherwise.
function parseTimestamp(text) {
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : Date.parse(trimmed);
}

function batchSummary(batch) {
  const sequence = batch.baseSequence >= 0 ? ` sequence ${batch.baseSequence}–${batch.lastSequence}` : "";
  const producer = batch.producerId >= 0 ? `producer ${batch.producerId} epoch ${batch.producerEpoch}${sequence}`
    : "no producer id";
  const offsets = batch.baseOffset === batch.lastOffset ? `${batch.baseOffset}` : `${batch.baseOffset}–${batch.lastOffset}`;
  return h("td", { colspan: 5 },
    `batch ${offsets} · ${batch.count} record${batch.count === 1 ? "" : "s"} · `,
    badge(batch.compressCodec, batch.compressCodec === "none" ? "" : "codec"),
    ` · ${producer} · leader epoch ${batch.partitionLeaderEpoch} · ${batch.timestampType} · ${formatBytes(batch.size)} `,
    batch.isTransactional ? badge("transactional", "txn") : null,
    batch.isControl ? badge("control", "control") : null,
    batch.aborted ? badge("aborted", "bad") : null);
}

// Keys and header values are shown as text or hex: JSON formatting is for values.
function textFormat(format) {
  return format === "hex" ? "hex" : "utf8";
}

function headerList(headers, format) {
  if (!headers?.length) return "";
  return h("ul", { class: "headers" }, headers.map(([name, value]) =>
    h("li", {}, h("span", { class: "header-name" }, label(name)), ": ", showData(value, textFormat(format)))));
}

function recordRow(topic, partition, batch, record, format, isTarget) {
  const classes = ["record", batch.aborted ? "aborted" : "", isTarget ? "target" : ""].filter(Boolean).join(" ");
  const offsetCell = h("td", { class: "num offset" }, String(record.offset), batch.aborted ? badge("aborted", "bad") : null);
  const time = h("td", { class: "time", title: String(record.timestamp) }, formatTime(record.timestamp));
  if (record.control) {
    const marker = record.control.type ?? record.control.error ?? "control";
    return h("tr", { class: `${classes} control-record`, "data-offset": record.offset }, offsetCell, time,
      h("td", { colspan: 3 }, badge(marker, `marker ${marker === "COMMIT" ? "ok" : "bad"}`),
        ` transaction marker of producer ${batch.producerId} (coordinator epoch ${record.control.coordinatorEpoch ?? "–"})`));
  }
  const value = [showData(record.value, format)];
  if (record.value_truncated) {
    value.push(h("span", { class: "cut" }, ` … cut at ${formatBytes(VALUE_CUT_BYTES)} of ${formatBytes(record.valueSize)} `),
      link(path("topics", topic, partition, "records", record.offset), "full value"));
  }
  return h("tr", { class: classes, "data-offset": record.offset }, offsetCell, time,
    h("td", { class: "key" }, showData(record.key, textFormat(format))), h("td", { class: "value" }, value),
    h("td", {}, headerList(record.headers, format)));
}

// Search by offset or by time: each a small form that moves the browser (go) when submitted.
function searchForms(go, message) {
  const offsetInput = h("input", { type: "number", min: 0, name: "offset", placeholder: "offset", class: "offset-input" });
  const timeInput = h("input", { type: "text", name: "timestamp", placeholder: "epoch ms or 2026-01-02T03:04:05Z",
    class: "time-input" });
  const byOffset = (event) => {
    event.preventDefault();
    const offset = Number(offsetInput.value);
    if (offsetInput.value !== "") go({ offset, target: offset, timestamp: null });
  };
  const byTime = (event) => {
    event.preventDefault();
    const ms = parseTimestamp(timeInput.value);
    if (Number.isNaN(ms)) message.textContent = `not a time: ${timeInput.value}`;
    else go({ timestamp: ms, target: null });
  };
  return [
    h("form", { class: "inline search-offset", onsubmit: byOffset }, offsetInput,
      h("button", { type: "submit" }, "Go to offset")),
    h("form", { class: "inline search-time", onsubmit: byTime }, timeInput, h("button", { type: "submit" }, "Find time")),
  ];
}

// Earliest, previous, next and latest page, from the page shown (state.page).
function pagingButtons(state, go) {
  const to = (offset) => () => go({ offset: offset(), timestamp: null, target: null });
  const pageBefore = (end) => Math.max(state.page?.log_start_offset ?? 0, end - RECORDS_PER_PAGE);
  const button = (name, text, offset) => h("button", { type: "button", class: name, onclick: to(offset) }, text);
  return h("span", { class: "paging" },
    button("first", "« earliest", () => null),
    button("previous", "‹ previous", () => pageBefore(state.page?.first ?? 0)),
    button("next", "next ›", () => state.page?.next_offset ?? 0),
    button("latest", "latest »", () => pageBefore(state.page?.high_watermark ?? 0)));
}

// The JSONL download of a range: it follows the page shown until the user edits it.
function exportControls(topic, partition, message) {
  let edited = false;
  const from = h("input", { type: "number", min: 0, name: "from", class: "export-from", title: "first offset" });
  const to = h("input", { type: "number", min: 0, name: "to", class: "export-to", title: "end offset (exclusive)" });
  const anchor = h("a", { class: "export", download: "", href: "#" }, "Download JSONL");
  const setHref = () => {
    anchor.href = `/v1/partitions/${encodeURIComponent(topic)}/${partition}/export?offset=${Number(from.value) || 0}`
      + (to.value === "" ? "" : `&end=${Number(to.value)}`);
  };
  for (const input of [from, to]) {
    input.addEventListener("input", () => {
      edited = true;
      setHref();
    });
  }
  anchor.addEventListener("click", (event) => {
    event.preventDefault();
    download(anchor.href, `${topic}-${partition}-${from.value}-${to.value}.jsonl`)
      .catch((error) => { message.textContent = error.message; });
  });
  return {
    el: h("span", { class: "inline export-range" }, "offsets", from, "to", to, anchor),
    follow(first, end) {
      if (edited) return;
      from.value = String(first);
      to.value = String(end);
      setHref();
    },
    reset() {
      edited = false;
    },
  };
}

// The records of one partition; refresh() re-reads the page shown, so new records appear as they arrive.
export function messageBrowser(topic, partition, ctx) {
  const params = query();
  const state = {
    offset: params.has("offset") ? Number(params.get("offset")) : null, // null: from the log start
    timestamp: params.has("timestamp") ? Number(params.get("timestamp")) : null,
    format: params.get("format") ?? "utf8",
    target: params.has("offset") ? Number(params.get("offset")) : null, // the record searched for, highlighted
    page: null,
  };
  const info = h("p", { class: "info" });
  const results = h("div", { class: "records" });
  const message = h("span", { class: "message" });
  const exporter = exportControls(topic, partition, message);

  function go(changes) {
    Object.assign(state, changes);
    setQuery({
      offset: state.timestamp === null ? state.offset : null, timestamp: state.timestamp,
      format: state.format === "utf8" ? null : state.format,
    });
    message.textContent = "";
    exporter.reset();
    ctx.refreshNow();
  }

  const controls = h("div", { class: "controls browser-controls" }, searchForms(go, message), pagingButtons(state, go),
    formatSelect(state.format, (format) => go({ format })), exporter.el, message);

  async function refresh() {
    const from = state.timestamp !== null ? `timestamp=${state.timestamp}` : `offset=${state.offset ?? 0}`;
    const page = await api(`${recordsUrl(topic, partition)}?${from}&max=${RECORDS_PER_PAGE}&value_bytes=${VALUE_CUT_BYTES}`);
    const records = page.batches.flatMap((batch) => batch.records);
    const first = records.length ? records[0].offset : page.next_offset;
    const last = records.length ? records[records.length - 1].offset : null;
    state.page = { ...page, first };
    const target = state.timestamp === null ? state.target
      : records.find((r) => !r.control && r.timestamp >= state.timestamp)?.offset ?? null;
    if (records.length) exporter.follow(first, last + 1);
    update(info, [page.log_start_offset, page.high_watermark, page.last_stable_offset, first, last], () => [
      `log start ${formatNumber(page.log_start_offset)} · high watermark `,
      h("span", { class: "hw" }, formatNumber(page.high_watermark)),
      ` · last stable ${formatNumber(page.last_stable_offset)} · `,
      records.length ? `showing offsets ${formatNumber(first)}–${formatNumber(last)}` : "no records here",
    ]);
    update(results, [page.batches, state.format, target], () => table(["Offset", "Timestamp", "Key", "Value", "Headers"],
      page.batches.flatMap((batch) => [
        h("tr", { class: `batch${batch.aborted ? " aborted" : ""}` }, batchSummary(batch)),
        ...batch.records.map((record) => recordRow(topic, partition, batch, record, state.format, record.offset === target)),
      ]), { class: "messages" }));
  }

  return { el: h("div", { class: "browser" }, controls, info, results), refresh };
}

// /topics/{t}/{p}/records/{offset}: one record with its whole value.
export function recordView({ name, partition, offset }) {
  let format = query().get("format") ?? "utf8";
  const body = h("div");
  let last = null;
  const el = h("div", { class: "view record" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / ", link(path("topics", name), name), " / ",
      link(`${path("topics", name, partition)}?offset=${encodeURIComponent(offset)}`, `partition ${partition}`), " / record"),
    h("h1", {}, `${name}-${partition} @ ${offset}`),
    h("div", { class: "controls" }, formatSelect(format, (chosen) => {
      format = chosen;
      setQuery({ format: chosen === "utf8" ? null : chosen });
      if (last) render(last);
    })),
    body);

  function render(record) {
    update(body, [record, format], () => [
      facts([
        ["Offset", String(record.offset)],
        ["Timestamp", `${formatTime(record.timestamp)} (${record.timestamp})`],
        ["Key", showData(record.key, textFormat(format))],
        ["Value size", formatBytes(record.valueSize ?? (record.value === null ? null : 0))],
        ["Aborted", record.aborted ? badge("aborted", "bad") : "no"],
      ]),
      record.batch ? h("table", { class: "messages" }, h("tbody", {}, h("tr", { class: "batch" }, batchSummary(record.batch))))
        : null,
      section("Headers", record.headers?.length ? headerList(record.headers, format) : h("p", { class: "empty" }, "none")),
      section("Value", h("div", { class: "full-value" }, showData(record.value, format))),
    ]);
  }

  async function refresh() {
    last = await api(`${recordsUrl(name, partition)}/${encodeURIComponent(offset)}`);
    render(last);
  }

  return { el, refresh };
}
