// hpcsa serve: the header's tools -- the metric menu (grouped, searchable, empty metrics hidden), derived
// metrics (hpcviewer's formula syntax), filters, the thread view, search, full names.
"use strict";

import {$, G, S, api, compact, el, notation, status, viewParams, writeHash} from "./util.js";
import {resetTree, reveal} from "./tree.js";

// ----------------------------------------------------------------------------------------------- metrics

export function renderMetricMenu() {
  const list = $("metric-list");
  const q = $("metric-search").value.trim().toLowerCase();
  const showEmpty = $("metric-empty").checked;
  const groups = new Map(G.info.groups.map((g) => [g, []]));
  let hidden = 0;
  for (const c of G.info.columns) {
    const empty = !c.total;
    if ((empty && !showEmpty && !S.cols.includes(c.index)) || (q && !c.name.toLowerCase().includes(q))) {
      if (empty && !showEmpty) hidden++;
      continue;
    }
    const box = el("input", {type: "checkbox", value: c.index});
    box.checked = S.cols.includes(c.index);
    box.addEventListener("change", () => {
      S.cols = G.info.columns.filter((x) => x.index === c.index ? box.checked : S.cols.includes(x.index)).map((x) => x.index);
      if (!S.cols.length) { S.cols = [c.index]; box.checked = true; }
      if (!S.cols.includes(Number(S.sort.split(":")[0]))) S.sort = `${S.cols[0]}:i`;
      resetTree();
    });
    (groups.get(c.group) || groups.set(c.group, []).get(c.group)).push(
      el("label", {title: c.description, "data-index": c.index}, box, ` $${c.index} ${c.name}`,
         el("span", {class: "muted"}, c.total ? `  ${compact(c.total)}` : "  (empty)")));
  }
  const out = [];
  for (const [g, items] of groups) {
    if (!items.length) continue;
    out.push(el("div", {class: "group", "data-group": g}, el("div", {class: "group-name"}, `${g} (${items.length})`), ...items));
  }
  if (hidden && !q) out.push(el("div", {class: "muted"}, `${hidden} metrics without data hidden`));
  list.replaceChildren(...out);
}

// ------------------------------------------------------------------------------------------- derived

export async function defineDerived(def, quiet = false) {
  const r = await api("api/derive", {definition: def});
  const c = r.column;
  if (!G.info.columns.some((x) => x.index === c.index)) G.info.columns.push(c);
  if (!S.derived.includes(def)) S.derived.push(def);
  if (!quiet && !S.cols.includes(c.index)) S.cols = S.cols.concat([c.index]);
  return c;
}

function setupDerived() {
  const dlg = $("derive-dialog");
  $("derive-open").onclick = () => {
    $("derive-error").textContent = "";
    $("derive-metrics").replaceChildren(...G.info.columns.filter((c) => c.total).map((c) =>
      el("li", {}, el("code", {}, `$${c.index}`), ` ${c.name}`)));
    dlg.showModal();
  };
  $("derive-cancel").onclick = () => dlg.close();
  $("derive-ok").onclick = async () => {
    const name = $("derive-name").value.trim(), formula = $("derive-formula").value.trim();
    if (!name || !formula) { $("derive-error").textContent = "give a name and a formula"; return; }
    try {
      const c = await defineDerived(`${name}=${formula}`);
      dlg.close();
      renderMetricMenu(); resetTree();
      status(`derived metric $${c.index} ${c.name} = ${formula}`);
    } catch (e) { $("derive-error").textContent = e.message; }
  };
}

// ------------------------------------------------------------------------------------------- filters

export function renderFilters() {
  $("filter-count").textContent = S.filters.length ? `(${S.filters.length})` : "";
  const names = {self: "hide node", children: "hide children", both: "hide node+children"};
  $("filter-list").replaceChildren(...S.filters.map((f, i) => {
    const [mode, ...rest] = f.split(":");
    const x = el("button", {title: "remove"}, "×");
    x.addEventListener("click", () => { S.filters.splice(i, 1); renderFilters(); filtersChanged(); });
    return el("li", {}, el("span", {}, `${rest.join(":")} — ${names[mode]}`), x);
  }));
}

function filtersChanged(added = false) {
  // top-down nodes keep their numbers under filters; the callers and flat views are rebuilt from the
  // filtered tree, so their node numbers change: the selection and zoom go
  const topDown = S.view === "top-down";
  if (added || !topDown) S.zoom = null;
  resetTree(topDown);
}

// ------------------------------------------------------------------------------------------- threads

export async function renderThreads() {
  const note = $("thread-note");
  $("thread-count").textContent = S.threads ? "(on)" : "";
  if (!S.threads) { note.hidden = true; return; }
  try {
    const r = await api("api/threads", {threads: S.threads});
    note.hidden = false;
    note.textContent = `Thread view "${S.threads}": ${r.profiles.toLocaleString()} of ${r.of.toLocaleString()} profiles` +
      (r.labels.length ? ` (${r.labels.slice(0, 4).join(", ")}${r.profiles > 4 ? ", …" : ""})` : "");
    note.dataset.profiles = r.profiles;
  } catch (e) { note.hidden = false; note.textContent = e.message; }
}

function setupThreads() {
  $("threads-apply").onclick = async () => {
    const p = $("threads-pattern").value.trim();
    try {
      if (p) await api("api/threads", {threads: p});
    } catch (e) { $("threads-error").textContent = e.message; return; }
    $("threads-error").textContent = "";
    S.threads = p; S.zoom = null;
    await renderThreads();
    resetTree(S.view === "top-down");
  };
  $("threads-clear").onclick = async () => {
    $("threads-pattern").value = ""; S.threads = ""; await renderThreads(); resetTree(S.view === "top-down");
  };
}

// -------------------------------------------------------------------------------------------- search

async function doSearch() {
  const q = $("search").value.trim(), ul = $("search-results");
  if (!q) { ul.hidden = true; return; }
  const r = await api("api/search", viewParams({q}));
  if (!r.nodes.length) { ul.replaceChildren(el("li", {class: "muted"}, "no match")); ul.hidden = false; return; }
  const rows = (await api("api/rows", viewParams({nodes: r.nodes.join(",")}))).rows;
  const write = notation(rows.map((rec) => rec.values[0]));
  ul.replaceChildren(...rows.map((rec) => {
    const li = el("li", {"data-node": rec.node, title: rec.full_name || rec.label}, `${rec.label}  `,
                  el("span", {class: "muted"}, write(rec.values[0])));
    li.addEventListener("click", () => { ul.hidden = true; reveal(rec.node); });
    return li;
  }));
  ul.hidden = false;
}

export function setupTools(onNames) {
  $("hot").title = "hot path from the selected node (or the root)";
  $("metric-search").addEventListener("input", renderMetricMenu);
  $("metric-empty").addEventListener("change", renderMetricMenu);
  $("filter-add").onclick = () => {
    const p = $("filter-pattern").value.trim();
    if (!p) return;
    S.filters.push(`${$("filter-mode").value}:${p}`); $("filter-pattern").value = "";
    renderFilters(); filtersChanged(true);
  };
  $("search").addEventListener("keydown", (e) => { if (e.key === "Enter") doSearch().catch((x) => status(x.message, true)); });
  $("full-names").addEventListener("change", () => { S.names = $("full-names").checked ? "full" : "short"; writeHash(); onNames(); });
  $("share").onclick = async () => {
    writeHash();
    try { await navigator.clipboard.writeText(location.href); status("link copied"); }
    catch (e) { status(`link: ${location.href}`); }
  };
  setupDerived(); setupThreads();
}
