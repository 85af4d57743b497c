// The inspector's shell: which view a URL shows, the poll that keeps the visible view live, and the header.
// Views are modules exporting a function (params, ctx) -> {el, refresh}; refresh() fetches only that view's data.

import { api, ApiError } from "./api.js";
import { clusterView } from "./cluster.js";
import { faultsView, transcriptView } from "./control.js";
import { formatDuration, label } from "./dom.js";
import { groupView } from "./groups.js";
import { recordView } from "./records.js";
import { schemasView, subjectSchemasView } from "./schemas.js";
import { partitionView, topicView } from "./topics.js";
import { transactionView } from "./transactions.js";

const POLL_MS = 1500;
const HEALTH_MAX_AGE_MS = 10_000;
const ROUTES = [
  [[], clusterView],
  [["topics", ":name"], topicView],
  [["topics", ":name", ":partition"], partitionView],
  [["topics", ":name", ":partition", "records", ":offset"], recordView],
  [["groups", ":id"], groupView],
  [["transactions", ":id"], transactionView],
  [["schemas"], schemasView],
  [["schemas", ":subject"], subjectSchemasView],
  [["faults"], faultsView],
  [["transcript"], transcriptView],
];

let current = null; // {view, generation}
let generation = 0;
let timer = null;
let health = null;
let healthAt = 0;

function matchRoute(pathname) {
  const segments = pathname.split("/").filter(Boolean).map(decodeURIComponent);
  for (const [pattern, view] of ROUTES) {
    if (pattern.length !== segments.length) continue;
    const params = {};
    const fits = pattern.every((part, i) => {
      if (part.startsWith(":")) params[part.slice(1)] = segments[i];
      return part.startsWith(":") || part === segments[i];
    });
    if (fits) return [view, params];
  }
  return [null, {}];
}

// What every view may ask: whether actions are allowed (read_only false) and how to move to another view.
const ctx = {
  readOnly: () => health?.read_only !== false,
  navigate,
  refreshNow: () => schedule(0),
};

async function loadHealth() {
  if (health && Date.now() - healthAt < HEALTH_MAX_AGE_MS) return;
  health = await api("/v1/health");
  healthAt = Date.now();
  const identity = document.getElementById("identity");
  identity.textContent = `v${health.version} · cluster ${label(health.cluster_id)} · up ${formatDuration(health.uptime_ms)}`
    + (ctx.readOnly() ? " · read-only" : "");
}

function setStatus(text, kind) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = `status ${kind}`;
}

function showNotice(text) {
  const notice = document.getElementById("notice");
  notice.textContent = text;
  notice.hidden = !text;
}

async function poll(mine) {
  timer = null;
  if (mine !== generation) return;
  try {
    await loadHealth();
    await current.view.refresh();
    if (mine !== generation) return;
    showNotice("");
    current.view.el.classList.remove("stale");
    setStatus(`live · ${new Date().toLocaleTimeString("en-GB")}`, "ok");
  } catch (error) {
    if (mine !== generation) return;
    current.view.el.classList.add("stale");
    if (error instanceof ApiError && error.status === 404) {
      showNotice(`Not found: ${error.message}. It may have been deleted; this view shows it again if it comes back.`);
      setStatus("live", "ok");
    } else if (error instanceof ApiError) {
      showNotice(`The broker answered ${error.status}: ${error.message}`);
      setStatus("error", "bad");
    } else {
      showNotice(`No answer from the broker: ${error.message}`);
      setStatus("unreachable", "bad");
    }
  }
  schedule(POLL_MS);
}

function schedule(delay) {
  if (timer !== null) clearTimeout(timer);
  const mine = generation;
  timer = document.visibilityState === "visible" ? setTimeout(() => poll(mine), delay) : null;
}

function show() {
  generation += 1;
  showNotice("");
  const [view, params] = matchRoute(location.pathname);
  const main = document.getElementById("view");
  if (!view) {
    current = null;
    main.replaceChildren(document.createTextNode(`No view at ${location.pathname}.`));
    return;
  }
  current = { view: view(params, ctx) };
  main.replaceChildren(current.view.el);
  for (const anchor of document.querySelectorAll("header nav a")) {
    anchor.classList.toggle("here", anchor.getAttribute("href") === location.pathname);
  }
  schedule(0);
}

function navigate(href) {
  history.pushState(null, "", href);
  show();
}

// Links inside the inspector move between views without a reload; API links (downloads) and modified clicks
// behave as usual.
document.addEventListener("click", (event) => {
  const anchor = event.target.closest("a[href]");
  if (!anchor || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  const url = new URL(anchor.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith("/v1/") || anchor.hasAttribute("download")) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener("popstate", show);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") schedule(0);
  else if (timer !== null) {
    clearTimeout(timer);
    timer = null;
  }
});

show();
