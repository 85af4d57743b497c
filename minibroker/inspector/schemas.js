// /schemas: the schema registry's subjects (soft-deleted ones marked), their versions, ids and compatibility;
// /schemas/{subject}: each version's schema, pretty-printed when it is JSON (Avro, JSON Schema), with its references.

import { api } from "./api.js";
import { badge, facts, h, link, num, path, row, section, table, update } from "./dom.js";

function pretty(schema) {
  try {
    return JSON.stringify(JSON.parse(schema), null, 2);
  } catch {
    return schema;
  }
}

export function schemasView() {
  const summary = h("div");
  const subjects = h("div");
  const el = h("div", { class: "view schemas" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / schema registry"),
    h("h1", {}, "Schemas"), summary, section("Subjects", subjects));

  async function refresh() {
    const registry = await api("/v1/schemas");
    update(summary, [registry.url, registry.compatibility, registry.mode], () => facts([
      ["URL", h("code", {}, registry.url ?? "–")],
      ["Compatibility", registry.compatibility],
      ["Mode", registry.mode],
    ]));
    update(subjects, registry.subjects, () => table(["Subject", "Versions", "Latest id", "Compatibility"],
      registry.subjects.map((s) => {
        const live = s.versions.filter((v) => !v.deleted);
        return row(
          link(path("schemas", s.subject), s.subject),
          [live.map((v) => v.version).join(", ") || "–", live.length < s.versions.length ? badge("soft-deleted") : null],
          num(live.length ? live[live.length - 1].id : null),
          s.compatibility);
      }), { class: "subjects" }));
  }

  return { el, refresh };
}

export function subjectSchemasView({ subject }) {
  const summary = h("div");
  const versions = h("div");
  const el = h("div", { class: "view subject-schemas" },
    h("p", { class: "crumbs" }, link("/", "Cluster"), " / ", link("/schemas", "schemas"), " / subject"),
    h("h1", {}, subject), summary, versions);

  async function refresh() {
    const found = await api(`/v1/schemas/${encodeURIComponent(subject)}`);
    update(summary, [found.compatibility, found.mode], () => facts([
      ["Compatibility", found.compatibility],
      ["Mode", found.mode],
    ]));
    update(versions, found.versions, () => found.versions.slice().reverse().map((v) => section(
      [`Version ${v.version} · id ${v.id} · ${v.schema_type} `, v.deleted ? badge("soft-deleted", "bad") : null],
      v.references.length ? h("p", { class: "references" }, "References: ",
        v.references.map((r, i) => [i ? ", " : "", link(path("schemas", r.subject), `${r.name} (${r.subject} v${r.version})`)]))
        : null,
      h("pre", { class: "schema" }, pretty(v.schema)))));
  }

  return { el, refresh };
}
