// hpcsa serve: the tree table of the top-down, bottom-up and flat views (hpcviewer's main pane).
// Metric columns are frozen at the left while the scope column scrolls; the scope column is resizable.
"use strict";

import {$, G, S, api, el, notation, pct, status, viewParams, writeHash} from "./util.js";
import {paneUpdate} from "./panes.js";

let nodes = new Map();      // node -> {rec, kids: [node] | null, total, expanded}
let roots = [];             // shown top nodes
let rootsTotal = 0;
let hot = new Set();
let generation = 0;         // bumps when the tree is reset (stale answers are dropped)

export function sides() {  // [column, side] of the shown value cells, in the server's order
  const out = [];
  for (const i of S.cols) {
    const c = G.info.columns.find((x) => x.index === i);
    if (c) for (const s of c.sides) out.push([c, s]);
  }
  return out;
}

function renderHead() {
  const tr = $("tree-head");
  tr.replaceChildren();
  for (const [c, s] of sides()) {
    const key = `${c.index}:${s[0]}`;
    const th = el("th", {title: c.description || c.name, "data-sort": key, class: "v" + (key === S.sort ? " sorted" : "")},
                  `${c.name} ${s === "inclusive" ? "(I)" : "(E)"}`);
    th.addEventListener("click", () => { S.sort = key; resetTree(); });
    tr.append(th);
  }
  const grip = el("span", {class: "grip", title: "drag to resize the scope column"});
  grip.addEventListener("pointerdown", resizeScope);
  tr.append(el("th", {class: "scope"}, "Scope", grip));
}

function resizeScope(ev) {  // the scope column's width follows the pointer (labels beyond it are cut with …)
  ev.preventDefault(); ev.stopPropagation();
  const grip = ev.target, th = grip.parentElement, table = $("tree");
  grip.setPointerCapture(ev.pointerId);
  const left = th.getBoundingClientRect().left;
  const move = (e) => { table.style.setProperty("--scope-w", `${Math.max(120, e.clientX - left)}px`); table.classList.add("sized"); };
  const up = () => { grip.removeEventListener("pointermove", move); grip.removeEventListener("pointerup", up); };
  grip.addEventListener("pointermove", move); grip.addEventListener("pointerup", up);
}

function rowEl(n, depth, write) {
  const {rec, expanded} = nodes.get(n);
  const tr = el("tr", {"data-node": n, "data-depth": depth, class: (S.sel === n ? "sel " : "") + (hot.has(n) ? "hot" : "")});
  const tog = el("span", {class: "tog"}, rec.children ? (expanded ? "▾" : "▸") : "");
  tog.addEventListener("click", (e) => { e.stopPropagation(); toggle(n); });
  const label = el("span", {class: "label", title: rec.full_name ? `${rec.label}\n${rec.full_name}` : rec.label}, rec.label);
  if (rec.full_name) label.dataset.full = rec.full_name;
  const td = el("td", {class: "scope"}, el("span", {class: "indent", style: `width:${14 * depth}px`}), tog, label);
  sides().forEach(([c, s], k) => {
    const v = rec.values[k];
    const cell = el("td", {class: "v", "data-v": v === null ? "" : String(v), "data-col": `${c.index}:${s[0]}`},
                    write[c.index](v));
    if (c.percent && v) cell.append(" ", el("span", {class: "pct"}, pct(v, c.total)));
    tr.append(cell);
  });
  tr.append(td);
  tr.addEventListener("click", () => select(n));
  tr.addEventListener("dblclick", () => toggle(n));
  return tr;
}

export function shownRows() {  // [node, depth] of every row drawn, in order
  const out = [];
  const visit = (list, depth) => {
    for (const n of list) {
      out.push([n, depth]);
      const e = nodes.get(n);
      if (e.expanded && e.kids) visit(e.kids, depth + 1);
    }
  };
  visit(roots, 0);
  return out;
}

export function renderTree() {
  const body = $("tree-body");
  const shown = shownRows();  // their values choose each metric's notation
  const byMetric = {};
  sides().forEach(([c], k) => {
    const vals = byMetric[c.index] || (byMetric[c.index] = []);
    for (const [n] of shown) vals.push(nodes.get(n).rec.values[k]);
  });
  const write = {};
  for (const i in byMetric) write[i] = notation(byMetric[i]);
  const rows = [];
  const walk = (list, depth, total, parent) => {
    for (const n of list) {
      rows.push(rowEl(n, depth, write));
      const e = nodes.get(n);
      if (e.expanded && e.kids) walk(e.kids, depth + 1, e.total, n);
    }
    if (list.length < total) {
      const more = el("tr", {class: "more", "data-parent": parent},
                      ...sides().map(() => el("td", {class: "v"})),
                      el("td", {class: "scope"}, el("span", {class: "indent", style: `width:${14 * depth + 14}px`}),
                         `(${total - list.length} more)`));
      more.addEventListener("click", () => loadMore(parent));
      rows.push(more);
    }
  };
  walk(roots, 0, rootsTotal, -1);
  body.replaceChildren(...rows);
  freezeColumns();
  const sel = body.querySelector("tr.sel");
  if (sel && !isVisible(sel)) scrollToRow(sel);
}

function scrollToRow(tr) {  // vertically only: the scope column keeps its horizontal position
  const pane = $("tree-pane"), r = tr.getBoundingClientRect(), p = pane.getBoundingClientRect();
  pane.scrollTop += r.top - p.top - p.height / 2;
}

function freezeColumns() {  // each metric column sticks at the left edge, after the ones before it
  const head = [...document.querySelectorAll("#tree-head th.v")];
  let left = 0;
  const lefts = head.map((th) => { const at = left; left += th.offsetWidth; return at; });
  for (const tr of document.querySelectorAll("#tree tr")) {
    const cells = tr.querySelectorAll(".v");
    cells.forEach((c, k) => { c.style.left = `${lefts[k] || 0}px`; c.classList.toggle("edge", k === cells.length - 1); });
  }
}

function isVisible(e) {
  const r = e.getBoundingClientRect(), p = $("tree-pane").getBoundingClientRect();
  return r.top >= p.top + 20 && r.bottom <= p.bottom;
}

function remember(rows) {
  for (const rec of rows) {
    const old = nodes.get(rec.node);
    if (old) old.rec = rec; else nodes.set(rec.node, {rec, kids: null, total: 0, expanded: false});
  }
}

async function loadKids(n, offset = 0) {
  const g = generation;
  const r = await api("api/children", viewParams({node: n, offset}));
  if (g !== generation) return false;
  remember(r.rows);
  const e = nodes.get(n);
  e.kids = offset ? e.kids.concat(r.rows.map((x) => x.node)) : r.rows.map((x) => x.node);
  e.total = r.total;
  return true;
}

async function loadMore(parent) {
  if (parent === -1) {
    const r = await api("api/children", viewParams({node: -1, offset: roots.length}));
    remember(r.rows); roots = roots.concat(r.rows.map((x) => x.node));
  } else await loadKids(parent, nodes.get(parent).kids.length);
  renderTree();
}

async function toggle(n) {
  const e = nodes.get(n);
  if (!e.rec.children) return;
  if (e.expanded) { e.expanded = false; renderTree(); return; }
  if (!e.kids && !(await loadKids(n))) return;
  e.expanded = true;
  renderTree();
}

async function expandTo(path) {  // expand every node of the path but the last (must be loaded in order)
  for (const n of path.slice(0, -1)) {
    const e = nodes.get(n);
    if (!e) return false;
    if (!e.kids && !(await loadKids(n))) return false;
    e.expanded = true;
    const last = path[path.indexOf(n) + 1];
    while (!e.kids.includes(last) && e.kids.length < e.total) await loadKids(n, e.kids.length);
    if (!e.kids.includes(last)) {  // a zero row not listed: fetch it alone
      const r = await api("api/rows", viewParams({nodes: last})); remember(r.rows); e.kids.push(last);
    }
  }
  return true;
}

export async function resetTree(keepSel = true, keepHot = false) {  // keepHot: the same nodes, new labels
  generation++;
  nodes = new Map();
  if (!keepHot) hot = new Set();
  renderHead();
  const t = performance.now();
  if (S.zoom !== null) {
    try {
      const r = await api("api/rows", viewParams({nodes: S.zoom}));
      remember(r.rows); roots = [S.zoom]; rootsTotal = 1;
      $("zoom-note").hidden = false;
      $("zoom-note").textContent = `Zoomed into ${r.rows[0].label}`;
    } catch (err) { S.zoom = null; }
  }
  if (S.zoom === null) {
    $("zoom-note").hidden = true;
    const r = await api("api/children", viewParams({node: -1}));
    remember(r.rows); roots = r.rows.map((x) => x.node); rootsTotal = r.total;
  }
  let level = roots.slice(0, 1);  // open the first levels, as hpcviewer does
  for (let d = 0; d < (S.view === "top-down" ? 3 : 1) && level.length; d++) {
    const next = [];
    for (const n of level) {
      const e = nodes.get(n);
      if (e.rec.children && await loadKids(n)) { e.expanded = true; next.push(...e.kids.slice(0, 1)); }
    }
    level = next;
  }
  if (keepSel && S.sel !== null) await reveal(S.sel, false);
  else S.sel = null;
  renderTree();
  writeHash();
  paneUpdate();
  status(`${G.info.contexts.toLocaleString()} contexts, ${G.info.profiles.toLocaleString()} profiles — ${S.view} view in ${Math.round(performance.now() - t)} ms`);
}

export async function reveal(n, render = true) {
  try {
    const {path} = await api("api/path", viewParams({node: n}));
    const top = S.zoom !== null ? path.indexOf(S.zoom) : 0;
    if (top < 0) { S.zoom = null; return resetTree(); }
    if (!nodes.has(path[top])) { const r = await api("api/rows", viewParams({nodes: path[top]})); remember(r.rows); }
    await expandTo(path.slice(top));
    S.sel = n;
  } catch (err) { status(err.message, true); S.sel = null; }
  if (render) { renderTree(); writeHash(); paneUpdate(); }
}

export function select(n) {
  S.sel = n;
  for (const tr of document.querySelectorAll("#tree-body tr.sel")) tr.classList.remove("sel");
  document.querySelector(`#tree-body tr[data-node="${n}"]`)?.classList.add("sel");
  writeHash();
  paneUpdate();
}

export function selectedLabel() {
  return S.sel !== null && nodes.has(S.sel) ? nodes.get(S.sel).rec.label : "";
}

export async function hotPath() {
  const r = await api("api/hotpath", viewParams({node: S.sel === null ? -1 : S.sel}));
  const {path: anc} = await api("api/path", viewParams({node: r.path[0]}));
  const full = anc.concat(r.path.slice(1));
  const top = S.zoom !== null ? Math.max(full.indexOf(S.zoom), 0) : 0;
  await expandTo(full.slice(top));
  hot = new Set(r.path);
  S.sel = r.path[r.path.length - 1];
  renderTree(); writeHash(); paneUpdate();
  status(`hot path: ${r.path.length} scopes, ends at ${nodes.get(S.sel).rec.label}`);
}

// CSV of exactly what the view shows: its rows (depth, label, every shown column at full precision).
export async function exportCsv() {
  const shown = shownRows();
  const text = await api("api/csv", viewParams({nodes: shown.map((x) => x[0]).join(","),
                                                depths: shown.map((x) => x[1]).join(",")}));
  window.__lastCsv = text;  // tests read what was offered
  const url = URL.createObjectURL(new Blob([text], {type: "text/csv"}));
  const a = el("a", {href: url, download: `hpcsa-${S.view}.csv`});
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
  status(`CSV: ${shown.length} rows of the ${S.view} view`);
}

export function onKey(ev) {  // tree navigation: arrows move, right opens, left closes or goes to the parent
  if (S.mode !== "tree" || ev.target.closest("input, select, textarea, dialog") || S.sel === null) return;
  const trs = [...document.querySelectorAll("#tree-body tr[data-node]")];
  const at = trs.findIndex((tr) => +tr.dataset.node === S.sel);
  if (at < 0) return;
  const e = nodes.get(S.sel);
  if (ev.key === "ArrowDown" && at + 1 < trs.length) select(+trs[at + 1].dataset.node);
  else if (ev.key === "ArrowUp" && at > 0) select(+trs[at - 1].dataset.node);
  else if (ev.key === "ArrowRight" && e.rec.children && !e.expanded) toggle(S.sel);
  else if (ev.key === "ArrowLeft" && e.expanded) toggle(S.sel);
  else if (ev.key === "ArrowLeft") {
    const depth = +trs[at].dataset.depth;
    for (let i = at - 1; i >= 0; i--) if (+trs[i].dataset.depth < depth) { select(+trs[i].dataset.node); break; }
  } else return;
  ev.preventDefault();
  const tr = document.querySelector("#tree-body tr.sel");
  if (tr && !isVisible(tr)) scrollToRow(tr);
}
