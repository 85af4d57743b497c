// /groups/{id}: a group (classic, consumer or share protocol): state, members and their assignments, committed
// offsets (a share group's start offsets) with the lag of each partition, the lag over time as the polls saw it, and
// for a share group the in-flight records of each share partition: their state, delivery count, holder and lock.

import { api } from "./api.js";
import { legend, lineChart, sample } from "./charts.js";
import { badge, facts, formatTime, h, label, link, num, path, row, section, table, update } from "./dom.js";

function assignmentText(assignment) {
  return (assignment ?? []).map((a) => `${a.topic}: ${a.partitions.join(", ")}`).join("; ") || "–";
}

function resetButtons(id, ctx) {
  const message = h("span", { class: "message" });
  const reset = (to) => async () => {
    try {
      await api(`/v1/groups/${encodeURIComponent(id)}/offsets`, { method: "POST", body: { to } });
      message.textContent = `offsets reset to ${to}`;
    } catch (error) {
      message.textContent = error.status === 409 ? `${error.message} (stop the group's consumers first)` : error.message;
    }
    ctx.refreshNow();
  };
  return h("div", { class: "actions reset-offsets", hidden: true },
    "Reset committed offsets to ",
    h("button", { type: "button", class: "reset-earliest", onclick: reset("earliest") }, "earliest"),
    h("button", { type: "button", class: "reset-latest", onclick: reset("latest") }, "latest"),
    message);
}

function inFlightTable(partitions) {
  const rows = partitions.flatMap((p) => p.in_flight.map((b) => row(
    link(path("topics", p.topic), p.topic), link(path("topics", p.topic, p.partition), String(p.partition)),
    b.first_offset === b.last_offset ? String(b.first_offset) : `${b.first_offset}–${b.last_offset}`,
    h("span", { class: `record-state ${b.state}` }, b.state), num(b.delivery_count),
    b.member_id === null ? "–" : h("code", {}, label(b.member_id)),
    b.lock_deadline_ms === null ? "–" : formatTime(b.lock_deadline_ms))));
  return table(["Topic", "Partition", "Offsets", "State", "Deliveries", "Held by", "Lock until"], rows,
    { class: "in-flight" });
}

export function groupView({ id }, ctx) {
  const summary = h("div");
  const members = h("div");
  const lag = h("div");
  const chart = h("div", { class: "chart-box" });
  const inFlight = h("div");
  const actions = resetButtons(id, ctx);
  const kind = h("span", {}, "group");
  const offsetsTitle = h("span", {}, "Committed offsets and lag");
  const shareSection = section("In-flight records", inFlight);
  shareSection.hidden = true;
  const el = h("div", { class: "view group" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / ", kind),
    h("h1", {}, id), actions, summary,
    section("Members", members),
    section(offsetsTitle, lag),
    shareSection,
    section("Lag over time", chart));

  async function refresh() {
    const group = await api(`/v1/groups/${encodeURIComponent(id)}`);
    const share = group.protocol === "share";
    kind.textContent = share ? "share group" : "consumer group";
    offsetsTitle.textContent = share ? "Share-partition start offsets and lag" : "Committed offsets and lag";
    actions.hidden = ctx.readOnly() || share;
    shareSection.hidden = !share;
    if (share) {
      update(inFlight, group.partitions, () => inFlightTable(group.partitions));
    }
    const lags = group.lag ?? [];
    const total = lags.reduce((sum, l) => sum + (l.lag ?? 0), 0);
    update(summary, [group.protocol, group.state, group.coordinator, group.members.length, total], () => facts([
      ["Protocol", group.protocol],
      ["State", badge(group.state, group.state === "Stable" ? "ok" : "")],
      ["Coordinator", `node ${group.coordinator}`],
      ["Members", String(group.members.length)],
      ["Total lag", h("span", { class: "total-lag" }, total.toLocaleString("en-US"))],
    ]));
    update(members, group.members, () => table(["Member id", "Instance id", "Client id", "Host", "Assignment"],
      group.members.map((m) => row(
        h("code", {}, label(m.member_id)), m.group_instance_id === null ? "–" : label(m.group_instance_id),
        h("span", { class: "client-id" }, label(m.client_id)), label(m.client_host), assignmentText(m.assignment))),
      { class: "members" }));
    update(lag, lags, () => table(["Topic", "Partition", share ? "Start offset" : "Committed", "High watermark", "Lag"], lags.map((l) => row(
      link(path("topics", l.topic), l.topic), link(path("topics", l.topic, l.partition), String(l.partition)),
      num(l.committed), num(l.high_watermark),
      h("td", { class: "num lag" }, l.lag === null ? "–" : l.lag.toLocaleString("en-US")))),
    { class: "lag" }));
    const named = { total: sample(`lag:${id}`, total) };
    for (const l of lags.slice(0, 7)) {
      named[`${l.topic}-${l.partition}`] = sample(`lag:${id}:${l.topic}:${l.partition}`, l.lag ?? 0);
    }
    chart.replaceChildren(lineChart(named), legend(Object.keys(named)));
  }

  return { el, refresh };
}
