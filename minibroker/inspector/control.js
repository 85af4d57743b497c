// The control plane: /faults (active faults with their hit counts, the clock; injecting and clearing faults when
// actions are allowed) and /transcript (every exchange as a filterable timeline, newest first).

import { api, ApiError } from "./api.js";
import { bar } from "./charts.js";
import {
  badge, cells, facts, formatTime, h, label, link, num, path, query, row, section, setQuery, table, update,
} from "./dom.js";

const FAULT_DETAILS = ["versions", "topic", "partition", "node", "client_id", "probability", "seed", "delay_ms", "jitter_ms",
  "throttle_ms"];
const ACTIONS = ["error", "delay", "disconnect", "stall", "throttle"];
const TRANSCRIPT_KEPT = 2000;
const TRANSCRIPT_SHOWN = 300;

// What a fault matches on and does besides its API and action, leaving out what is as good as unset.
function faultDetails(fault) {
  const unset = (key, value) => value === null || value === undefined || (Array.isArray(value) && !value.length)
    || (key === "probability" && value === 1) || (key.endsWith("_ms") && value === 0);
  return FAULT_DETAILS.filter((key) => !unset(key, fault[key]))
    .map((key) => `${key}=${Array.isArray(fault[key]) ? fault[key].join("–") : label(fault[key])}`).join(" ");
}

function faultForm(ctx, message) {
  const inject = async (event) => {
    event.preventDefault();
    const form = event.target;
    const spec = { api: form.elements.api.value.trim(), action: form.elements.action.value };
    if (spec.action === "error") spec.error = form.elements.error.value.trim();
    if (spec.action === "delay") spec.delay_ms = Number(form.elements.ms.value || 0);
    if (spec.action === "throttle") spec.throttle_ms = Number(form.elements.ms.value || 0);
    if (form.elements.count.value) spec.count = Number(form.elements.count.value);
    if (form.elements.topic.value.trim()) spec.topic = form.elements.topic.value.trim();
    try {
      const fault = await api("/v1/faults", { method: "POST", body: spec });
      message.textContent = `fault ${fault.id} added`;
    } catch (error) {
      message.textContent = error.message;
    }
    ctx.refreshNow();
  };
  return h("form", { class: "actions inject-fault", hidden: true, onsubmit: inject },
    h("input", { name: "api", placeholder: "API (Produce, Fetch, ...)", required: true }),
    h("select", { name: "action" }, ACTIONS.map((action) => h("option", { value: action }, action))),
    h("input", { name: "error", placeholder: "error (NOT_LEADER_OR_FOLLOWER)" }),
    h("input", { name: "ms", type: "number", min: 0, placeholder: "ms (delay, throttle)" }),
    h("input", { name: "count", type: "number", min: 1, placeholder: "count" }),
    h("input", { name: "topic", placeholder: "topic" }),
    h("button", { type: "submit" }, "Inject fault"));
}

async function clearFaults(id, message, ctx) {
  try {
    const answer = await api(id === null ? "/v1/faults" : `/v1/faults/${id}`, { method: "DELETE" });
    message.textContent = `cleared ${answer.cleared}`;
  } catch (error) {
    message.textContent = error.message;
  }
  ctx.refreshNow();
}

export function faultsView(params, ctx) {
  const clock = h("div");
  const faults = h("div");
  const message = h("span", { class: "message" });
  const form = faultForm(ctx, message);
  const clearAll = h("button", {
    type: "button", class: "clear-faults", hidden: true, onclick: () => clearFaults(null, message, ctx),
  }, "Clear every fault");
  const el = h("div", { class: "view faults" },
    h("h1", {}, "Faults and clock"),
    section("Clock", clock),
    section("Active faults", form, h("div", { class: "controls" }, clearAll, message), faults));

  async function refresh() {
    const [now, list] = await Promise.all([api("/v1/clock"), api("/v1/faults")]);
    const readOnly = ctx.readOnly();
    form.hidden = readOnly;
    clearAll.hidden = readOnly || !list.faults.length;
    clock.replaceChildren(facts([
      ["Now", h("span", { class: "clock-now" }, `${formatTime(now.now_ms)} (${now.now_ms})`)],
      ["Kind", now.virtual ? badge("virtual: moves only when a test moves it", "warn") : "system clock"],
    ]));
    update(faults, [list, readOnly], () => table(["Id", "API", "Action", "Error", "Hits", "Count left", "Matches", ""],
      list.faults.map((f) => row(num(f.id), f.api, f.action, f.error ?? "–", h("td", { class: "num hits" }, String(f.hits)),
        f.count === null ? "every match" : String(f.count), faultDetails(f),
        readOnly ? "" : h("button", { type: "button", onclick: () => clearFaults(f.id, message, ctx) }, "clear"))),
      { class: "fault-list" }));
  }

  return { el, refresh };
}

function errorText(error) {
  const where = error.topic !== undefined ? `@${error.topic}${error.partition !== undefined ? `-${error.partition}` : ""}`
    : error.group !== undefined ? `@group ${label(error.group)}` : "";
  return `${error.error}${where}`;
}

function partitionsText(partitions) {
  return Object.entries(partitions ?? {}).map(([topic, list]) => (list.length ? `${topic}:${list.join(",")}` : topic)).join(" ");
}

function isError(entry) {
  return Boolean(entry.errors?.length || entry.fault);
}

// What an entry is matched against by the free-text filter.
function entryText(entry) {
  return [entry.api, label(entry.client_id ?? ""), entry.peer, partitionsText(entry.partitions), entry.outcome,
    ...(entry.errors ?? []).map(errorText), entry.group_id, entry.transactional_id].filter(Boolean).join(" ").toLowerCase();
}

export function transcriptView(params, ctx) {
  const filters = { api: query().get("api") ?? "", text: query().get("q") ?? "", errors: query().get("errors") === "true" };
  let entries = [];
  let next = 0;
  let kept = true;
  const list = h("div");
  const counter = h("span", { class: "message" });
  const refilter = () => {
    setQuery({ api: filters.api, q: filters.text, errors: filters.errors });
    render();
  };
  const el = h("div", { class: "view transcript" },
    h("h1", {}, "Transcript"),
    h("div", { class: "controls" },
      h("input", { type: "search", class: "filter-api", placeholder: "API", value: filters.api,
        oninput: (event) => { filters.api = event.target.value.trim(); refilter(); } }),
      h("input", { type: "search", class: "filter-text", placeholder: "client, peer, topic, error, group…", value: filters.text,
        oninput: (event) => { filters.text = event.target.value.trim(); refilter(); } }),
      h("label", {}, h("input", { type: "checkbox", checked: filters.errors,
        onchange: (event) => { filters.errors = event.target.checked; refilter(); } }), " errors and faults only"),
      counter),
    list);

  function render() {
    if (!kept) {
      list.replaceChildren(h("p", { class: "empty" }, "No transcript is kept: start the broker with transcript.enabled=true."));
      return;
    }
    const api = filters.api.toLowerCase();
    const text = filters.text.toLowerCase();
    const shown = entries.filter((e) => (!api || e.api.toLowerCase() === api)
      && (!text || entryText(e).includes(text)) && (!filters.errors || isError(e)));
    counter.textContent = `${shown.length} of ${entries.length} entries`;
    update(list, [shown.length ? shown[shown.length - 1].seq : 0, shown.length, shown[0]?.seq], () => {
      const maxElapsed = Math.max(1, ...shown.map((e) => e.elapsed_ms));
      return table(["#", "Time", "Node", "Peer", "Client", "Request", "Partitions", "Outcome", "Elapsed"],
        shown.slice(-TRANSCRIPT_SHOWN).reverse().map((e) => h("tr", { class: isError(e) ? "has-error" : "" }, cells(
          num(e.seq), h("td", { class: "time", title: String(e.time_ms) }, formatTime(e.time_ms)), num(e.node), e.peer,
          h("td", { class: "client-id" }, e.client_id === null ? "–" : label(e.client_id)),
          h("td", {}, `${e.api} v${e.version} `, h("span", { class: "corr" }, `#${e.correlation_id}`),
            e.group_id ? [" ", link(path("groups", e.group_id), label(e.group_id))] : null,
            e.transactional_id ? [" ", link(path("transactions", e.transactional_id), label(e.transactional_id))] : null),
          partitionsText(e.partitions),
          h("td", {}, e.fault ? badge(`fault ${e.fault}`, "warn") : null,
            e.errors?.length ? e.errors.map((error) => badge(errorText(error), "bad")) : e.outcome),
          h("td", { class: "num elapsed" }, `${e.elapsed_ms} ms`, bar(e.elapsed_ms / maxElapsed))))),
        { class: "transcript-list" });
    });
  }

  async function refresh() {
    try {
      const page = await api(`/v1/transcript?since=${next}`);
      kept = true;
      entries = entries.concat(page.entries).slice(-TRANSCRIPT_KEPT);
      next = page.next;
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 409)) throw error;
      kept = false;
    }
    render();
  }

  return { el, refresh };
}
