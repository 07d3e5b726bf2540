// hpcsa serve: the page. Plain JS modules, no libraries; every number comes from the server's views API.
// util.js: state, requests, formats; tree.js: the tree table; panes.js: source and per-profile plots;
// tools.js: the header's tools; trace.js and tracedraw.js: the trace views.
"use strict";

import {$, G, S, api, readHash, splitter, status, writeHash} from "./util.js";
import {exportCsv, hotPath, onKey, resetTree} from "./tree.js";
import {paneUpdate, setupPanes} from "./panes.js";
import {defineDerived, renderFilters, renderMetricMenu, renderThreads, setupTools} from "./tools.js";
import {drawTrace, resetTraceState, setupTrace, showTrace} from "./trace.js";

function markView() {
  for (const b of document.querySelectorAll("#views .tab")) {
    b.classList.toggle("active", S.mode === "trace" ? b.dataset.view === "trace" : b.dataset.view === S.view);
  }
  $("flatten-box").hidden = S.view !== "flat" || S.mode !== "tree";
  $("flatten-n").textContent = S.flatten;
  $("tree-main").hidden = S.mode !== "tree";
  $("trace-main").hidden = S.mode !== "trace";
  $("tree-tools").hidden = S.mode !== "tree";
  document.body.dataset.mode = S.mode;
}

function setupViews() {
  for (const b of document.querySelectorAll("#views .tab")) {
    b.addEventListener("click", () => {
      if (b.dataset.view === "trace") { S.mode = "trace"; markView(); showTrace().catch((e) => status(e.message, true)); return; }
      const same = S.mode === "tree" && S.view === b.dataset.view;
      S.mode = "tree";
      if (same) { markView(); return; }
      S.view = b.dataset.view; S.sel = null; S.zoom = null; S.flatten = 0; markView(); resetTree(false);
    });
  }
  $("flatten-more").onclick = () => { S.flatten++; S.sel = null; S.zoom = null; markView(); resetTree(false); };
  $("flatten-less").onclick = () => { if (S.flatten) { S.flatten--; S.sel = null; S.zoom = null; markView(); resetTree(false); } };
  $("hot").onclick = () => hotPath().catch((e) => status(e.message, true));
  $("zoom-in").onclick = () => { if (S.sel !== null) { S.zoom = S.sel; resetTree(); } };
  $("zoom-out").onclick = async () => {
    if (S.zoom === null) return;
    const {path} = await api("api/path", {view: S.view, columns: S.cols.join(","), flatten: S.flatten,
                                          filters: S.filters.join("\n"), threads: S.threads, node: S.zoom});
    S.zoom = path.length > 1 ? path[path.length - 2] : null;
    resetTree();
  };
  $("csv").onclick = () => exportCsv().catch((e) => status(e.message, true));
}

async function namesChanged() {
  if (S.mode === "trace") await drawTrace();
  else await resetTree(true, true);  // the same rows with other labels: the selection and hot path stay
}

async function start() {
  const known = new Set(G.info.columns.map((c) => c.index));
  for (const def of S.derived) {  // the link's derived metrics, defined again (the same numbers on this server)
    try { await defineDerived(def, true); } catch (e) { status(`derived metric ${def}: ${e.message}`, true); }
  }
  for (const c of G.info.columns) known.add(c.index);
  if (!S.cols || !S.cols.every((i) => known.has(i))) S.cols = G.info.default_columns.filter((i) => known.has(i));
  if (!S.sort || !S.cols.includes(Number(S.sort.split(":")[0]))) S.sort = `${S.cols[0]}:i`;
  $("full-names").checked = S.names === "full";
  $("threads-pattern").value = S.threads;
  renderMetricMenu(); renderFilters(); markView();
  await renderThreads();
  if (S.mode === "trace") { writeHash(); await showTrace(); }
  else await resetTree();
}

async function main() {
  try {
    G.info = await api("api/info");
  } catch (e) { status(`cannot read the database: ${e.message}`, true); return; }
  readHash();
  document.title = `${G.info.title} — hpcsa`;
  $("title").textContent = G.info.title;
  $("dbpath").textContent = `${G.info.path} · ${G.info.contexts.toLocaleString()} contexts · ` +
    `${G.info.profiles.toLocaleString()} profiles in ${G.info.processes.toLocaleString()} process${G.info.processes === 1 ? "" : "es"}`;
  setupViews(); setupPanes(); setupTools(namesChanged); setupTrace();
  splitter($("split-tree"), $("side"), "hpcsa-side-width");
  splitter($("split-trace"), $("trace-side"), "hpcsa-trace-side-width");
  await start();
  document.body.dataset.ready = "1";
}

async function followHash() {  // a pasted link in the same tab
  Object.assign(S, {mode: "tree", filters: [], derived: [], sel: null, zoom: null, flatten: 0, t0: null, t1: null,
                    r0: null, r1: null, trow: null, threads: ""});
  resetTraceState();
  readHash();
  await start();
  if (S.mode === "tree") paneUpdate();
}

window.addEventListener("DOMContentLoaded", main);
window.addEventListener("keydown", onKey);
window.addEventListener("unhandledrejection", (ev) => status(ev.reason?.message || String(ev.reason), true));
window.addEventListener("hashchange", () => { if (G.info) followHash(); });
