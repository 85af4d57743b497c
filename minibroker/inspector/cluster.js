// "/": the cluster at a glance (nodes, listeners, settings that differ from Kafka's defaults, uptime, request
// rates) and the lists of topics (paged, filtered), consumer groups and transactional ids.

import { api } from "./api.js";
import { rates, sample, sparkline } from "./charts.js";
import {
  badge, facts, formatBytes, formatDuration, formatTime, h, label, link, num, pager, path, query, row, section, setQuery,
  table, update,
} from "./dom.js";

const TOPICS_PER_PAGE = 100;

export function clusterView(params, ctx) {
  const state = {
    filter: query().get("filter") ?? "",
    internal: query().get("internal") === "true",
    offset: Number(query().get("offset") ?? 0),
  };
  const summary = h("div");
  const nodes = h("div");
  const requests = h("div");
  const settings = h("div");
  const topics = h("div");
  const groups = h("div");
  const transactions = h("div");
  const actionMessage = h("span", { class: "message" });
  const createForm = h("form", { class: "actions", hidden: true, onsubmit: createTopic },
    h("input", { name: "name", placeholder: "new topic name", required: true, pattern: "[a-zA-Z0-9._\\-]+", maxlength: 249 }),
    h("input", { name: "partitions", type: "number", min: 1, value: "1", title: "partitions" }),
    h("input", { name: "replication", type: "number", min: 1, value: "1", title: "replication factor" }),
    h("button", { type: "submit" }, "Create topic"), actionMessage);
  const filterInput = h("input", {
    type: "search", placeholder: "filter topics", value: state.filter,
    oninput: (event) => changeList({ filter: event.target.value, offset: 0 }),
  });
  const internalBox = h("input", {
    type: "checkbox", checked: state.internal, onchange: (event) => changeList({ internal: event.target.checked, offset: 0 }),
  });

  function changeList(changes) {
    Object.assign(state, changes);
    setQuery({ filter: state.filter, internal: state.internal, offset: state.offset || null });
    ctx.refreshNow();
  }

  async function createTopic(event) {
    event.preventDefault();
    const form = event.target;
    const body = {
      name: form.elements.name.value, partitions: Number(form.elements.partitions.value),
      replication_factor: Number(form.elements.replication.value), config: {},
    };
    try {
      await api("/v1/topics", { method: "POST", body });
      actionMessage.textContent = `created ${body.name}`;
      form.elements.name.value = "";
    } catch (error) {
      actionMessage.textContent = error.message;
    }
    ctx.refreshNow();
  }

  const el = h("div", { class: "view cluster" },
    h("h1", {}, "Cluster"), summary,
    h("div", { class: "columns" }, section("Nodes", nodes), section("Requests", requests)),
    section("Topics", h("div", { class: "controls" }, filterInput, h("label", {}, internalBox, " internal topics")),
      createForm, topics),
    h("div", { class: "columns" }, section("Consumer groups", groups), section("Transactional ids", transactions)),
    section("Settings that differ from their defaults", settings));

  async function refresh() {
    const listQuery = new URLSearchParams({
      offset: state.offset, limit: TOPICS_PER_PAGE, filter: state.filter, internal: state.internal,
    });
    const [cluster, topicList, groupList, txnList] = await Promise.all([
      api("/v1/cluster"), api(`/v1/topics?${listQuery}`), api("/v1/groups"), api("/v1/transactions"),
    ]);
    createForm.hidden = ctx.readOnly();
    update(summary, cluster, () => renderSummary(cluster));
    update(nodes, cluster.nodes, () => renderNodes(cluster.nodes));
    update(settings, cluster.settings, () => table(["Setting", "Value", "Kafka's default"], cluster.settings.map((s) =>
      row(h("code", {}, s.name), h("code", {}, String(s.value)), h("code", {}, s.default === null ? "null" : String(s.default)))),
      { class: "settings" }));
    renderRequests(requests, cluster.requests);
    update(topics, topicList, () => renderTopics(topicList, (offset) => changeList({ offset })));
    update(groups, groupList, () => table(["Group", "Protocol", "Type", "State", "Members", "Coordinator"],
      groupList.groups.map((g) => row(
        typeof g.group_id === "string" ? link(path("groups", g.group_id), g.group_id) : label(g.group_id),
        g.protocol, g.protocol_type || "–", g.state, num(g.members), num(g.coordinator))), { class: "groups" }));
    update(transactions, txnList, () => table(
      ["Transactional id", "State", "Producer id", "Epoch", "Timeout", "Partitions", "Coordinator"],
      txnList.transactions.map((t) => row(
        typeof t.transactional_id === "string" ? link(path("transactions", t.transactional_id), t.transactional_id)
          : label(t.transactional_id),
        t.state, num(t.producer_id), num(t.producer_epoch), formatDuration(t.timeout_ms),
        num(t.partitions), num(t.coordinator))), { class: "transactions" }));
  }

  return { el, refresh };
}

function renderSummary(cluster) {
  return facts([
    ["Cluster id", label(cluster.cluster_id)],
    ["minibroker", cluster.version],
    ["Emulates Kafka", cluster.kafka_version ?? "no: every API version served"],
    ["Uptime", formatDuration(cluster.uptime_ms)],
    ["Clock", [formatTime(cluster.clock?.now_ms), cluster.clock?.virtual ? badge("virtual", "warn") : null]],
    ["Mode", cluster.read_only ? badge("read-only") : badge("actions allowed", "warn")],
    ["Topics", String(cluster.counts?.topics ?? "–")],
    ["Partitions", String(cluster.counts?.partitions ?? "–")],
    ["Groups", String(cluster.counts?.groups ?? "–")],
    ["Transactional ids", String(cluster.counts?.transactional_ids ?? "–")],
  ]);
}

function renderNodes(nodes) {
  return table(["Node", "Running", "Listeners"], nodes.map((node) => row(
    num(node.id), node.running ? badge("running", "ok") : badge("stopped", "bad"),
    h("ul", { class: "plain" }, node.listeners.map((listener) =>
      h("li", {}, h("code", {}, listener.address), ` ${listener.name}`,
        listener.security_protocol ? ` (${listener.security_protocol})` : ""))))), { class: "nodes" });
}

// Request counts are cumulative: the rate per API is the difference between two polls.
function renderRequests(el, requests) {
  const names = Object.keys(requests.by_api).sort();
  const total = sample("requests:total", requests.total);
  const rows = names.map((name) => {
    const samples = sample(`requests:${name}`, requests.by_api[name]);
    const perSecond = rates(samples);
    return { name, count: requests.by_api[name], rate: perSecond[perSecond.length - 1] ?? 0, perSecond };
  });
  const totalRates = rates(total);
  const now = totalRates[totalRates.length - 1] ?? 0;
  el.replaceChildren(
    h("p", {}, `${requests.total.toLocaleString("en-US")} requests, ${now.toFixed(1)}/s now `,
      sparkline(totalRates, "requests per second")),
    table(["API", "Requests", "Per second", "Recent"], rows.map((r) => row(
      r.name, num(r.count), h("td", { class: "num" }, r.rate.toFixed(1)), sparkline(r.perSecond, `${r.name} per second`))),
    { class: "requests" }));
}

function renderTopics(list, onpage) {
  return [
    table(["Topic", "Partitions", "Replication", "Records", "Size", "Topic id"], list.topics.map((t) => row(
      [link(path("topics", t.name), t.name), t.internal ? badge("internal") : null],
      num(t.partitions), num(t.replication_factor), num(t.records), h("td", { class: "num" }, formatBytes(t.size_bytes)),
      h("code", {}, t.topic_id ?? "–"))), { class: "topics" }),
    pager(list.offset, list.limit, list.total, onpage),
  ];
}
