// /topics/{name}: a topic's partitions (offsets, size, segments, leader, throughput), its configs and the message
// browser of its first partition; /topics/{name}/{partition}: one partition and its message browser.

import { api } from "./api.js";
import { rates, sample, sparkline } from "./charts.js";
import { badge, facts, formatBytes, h, link, num, pager, path, query, row, section, setQuery, table, update } from "./dom.js";
import { messageBrowser } from "./records.js";

const PARTITIONS_PER_PAGE = 100;

// The records a partition gained per second between polls, from its high watermark.
function throughput(topic, partition) {
  const perSecond = rates(sample(`hw:${topic}:${partition.partition}`, partition.high_watermark));
  const now = perSecond[perSecond.length - 1] ?? 0;
  return [sparkline(perSecond, `${topic}-${partition.partition}: records per second`), ` ${now.toFixed(1)}/s`];
}

function partitionRows(topic, partitions) {
  return partitions.map((p) => row(
    link(path("topics", topic, p.partition), String(p.partition)),
    num(p.leader), num(p.leader_epoch), (p.replicas ?? []).join(", "),
    num(p.log_start_offset), h("td", { class: "num hw" }, p.high_watermark.toLocaleString("en-US")),
    num(p.last_stable_offset), h("td", { class: "num" }, formatBytes(p.size_bytes)), num(p.segments),
    h("td", { class: "spark-cell" }, throughput(topic, p))));
}

const PARTITION_HEADERS = ["Partition", "Leader", "Leader epoch", "Replicas", "Log start", "High watermark",
  "Last stable", "Size", "Segments", "Records/s"];

function deleteButton(name, ctx) {
  const message = h("span", { class: "message" });
  const confirm = h("button", { type: "button", class: "danger", hidden: true, onclick: async () => {
    try {
      await api(`/v1/topics/${encodeURIComponent(name)}`, { method: "DELETE" });
      ctx.navigate("/");
    } catch (error) {
      message.textContent = error.message;
    }
  } }, `Really delete ${name}`);
  const ask = h("button", { type: "button", onclick: () => { confirm.hidden = false; } }, "Delete topic…");
  return h("div", { class: "actions delete-topic", hidden: true }, ask, confirm, message);
}

export function topicView({ name }, ctx) {
  let offset = Number(query().get("poffset") ?? 0);
  const summary = h("div");
  const partitions = h("div");
  const configs = h("details", { class: "configs" });
  const actions = deleteButton(name, ctx);
  const browser = messageBrowser(name, 0, ctx);
  const el = h("div", { class: "view topic" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / topic"),
    h("h1", {}, name), actions, summary,
    section("Partitions", partitions),
    section(["Messages of partition 0 ", link(path("topics", name, 0), "(open partition)")], browser.el),
    section("Configs", configs));

  async function refresh() {
    const topic = await api(`/v1/topics/${encodeURIComponent(name)}?offset=${offset}&limit=${PARTITIONS_PER_PAGE}`);
    actions.hidden = ctx.readOnly() || topic.internal;
    update(summary, topic, () => facts([
      ["Topic id", h("code", {}, topic.topic_id ?? "–")],
      ["Partitions", String(topic.partition_count)],
      ["Replication factor", String(topic.replication_factor)],
      ["Internal", topic.internal ? "yes" : "no"],
      ["Size", formatBytes(topic.partitions.reduce((sum, p) => sum + (p.size_bytes ?? 0), 0))],
    ]));
    partitions.replaceChildren(table(PARTITION_HEADERS, partitionRows(name, topic.partitions), { class: "partitions" }),
      pager(topic.offset, topic.limit, topic.partition_count, (next) => {
        offset = next;
        setQuery({ poffset: next || null });
        ctx.refreshNow();
      }) ?? "");
    const overrides = topic.configs.filter((c) => c.source !== "default").length;
    update(configs, topic.configs, () => [h("summary", {}, `${topic.configs.length} configs, ${overrides} not the default`),
      table(["Config", "Value", "Source"],
      [...topic.configs].sort((a, b) => (a.source === "default" ? 1 : 0) - (b.source === "default" ? 1 : 0))
        .map((c) => row(h("code", {}, c.name), h("code", {}, c.value === null ? "null" : String(c.value)),
          c.source === "default" ? "default" : badge(c.source === "topic" ? "set on the topic" : "broker setting", "warn"))),
      { class: "configs" })]);
    await browser.refresh();
  }

  return { el, refresh };
}

export function partitionView({ name, partition }, ctx) {
  const index = Number(partition);
  const summary = h("div");
  const browser = messageBrowser(name, index, ctx);
  const el = h("div", { class: "view partition" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / ", link(path("topics", name), name), " / partition"),
    h("h1", {}, `${name}-${partition}`), summary,
    section("Messages", browser.el));

  async function refresh() {
    const topic = await api(`/v1/topics/${encodeURIComponent(name)}?offset=${index}&limit=1`);
    const found = topic.partitions.find((p) => p.partition === index);
    summary.replaceChildren(found ? table(PARTITION_HEADERS, partitionRows(name, [found]), { class: "partitions" })
      : h("p", { class: "empty" }, `${name} has no partition ${partition}`));
    if (found) await browser.refresh();
  }

  return { el, refresh };
}
