// /transactions/{id}: a transactional id's state, producer id and epoch, timeout, the partitions of its open
// transaction, and its timeline (each state it went through, with the producer and partitions of the moment).

import { api } from "./api.js";
import { stateStrip } from "./charts.js";
import { badge, facts, formatDuration, formatTime, h, link, num, path, row, section, table, update } from "./dom.js";

function partitionLinks(partitions) {
  if (!partitions?.length) return "–";
  return partitions.flatMap(([topic, partition], i) =>
    [i ? ", " : "", link(path("topics", topic, partition), `${topic}-${partition}`)]);
}

export function transactionView({ id }) {
  const summary = h("div");
  const strip = h("div", { class: "chart-box" });
  const timeline = h("div");
  const el = h("div", { class: "view transaction" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / transactional id"),
    h("h1", {}, id), summary,
    section("Timeline", strip, timeline));

  async function refresh() {
    const txn = await api(`/v1/transactions/${encodeURIComponent(id)}`);
    update(summary, txn, () => facts([
      ["State", badge(txn.state, txn.state === "CompleteAbort" ? "bad" : txn.state === "CompleteCommit" ? "ok" : "txn")],
      ["Producer id", String(txn.producer_id)],
      ["Producer epoch", String(txn.producer_epoch)],
      ["Timeout", formatDuration(txn.timeout_ms)],
      ["Started", formatTime(txn.start_ms)],
      ["Partitions", h("span", { class: "txn-partitions" }, partitionLinks(txn.partitions))],
    ]));
    const steps = txn.timeline ?? [];
    update(strip, steps, () => stateStrip(steps.map((step) => [step.time_ms, step.state])));
    update(timeline, steps, () => table(["Time", "State", "Producer id", "Epoch", "Partitions"], steps.map((step) => row(
      formatTime(step.time_ms), step.state, num(step.producer_id), num(step.producer_epoch), partitionLinks(step.partitions))),
    { class: "timeline" }));
  }

  return { el, refresh };
}
