// hpcsa serve: the page. Plain JS, no libraries; every number comes from the server's views API.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const S = {  // the state kept in the URL's hash
  view: "top-down", cols: null, sort: null, filters: [], flatten: 0, sel: null, zoom: null, pane: "source",
  depth: 1, t0: null, t1: null,
};
let INFO = null;
let nodes = new Map();      // node -> {rec, kids: [node] | null, total, expanded}
let roots = [];             // shown top nodes
let rootsTotal = 0;
let hot = new Set();
let generation = 0;         // bumps when the tree is reset (stale answers are dropped)

// ---------------------------------------------------------------------------------------------- helpers

window.__busy = 0;  // requests in flight (tests wait for 0)

async function api(path, params = {}) {
  const q = new URLSearchParams(params);
  window.__busy++;
  try {
    const r = await fetch(`${path}?${q}`, {headers: {"X-Hpcsa-Token": TOKEN}});
    const body = r.headers.get("Content-Type")?.startsWith("application/json") ? await r.json() : await r.text();
    if (!r.ok) throw new Error(body.error || `${r.status}`);
    return body;
  } finally { window.__busy--; }
}

function viewParams(extra = {}) {
  const p = {view: S.view, columns: S.cols.join(","), sort: S.sort, flatten: S.flatten,
             filters: S.filters.join("\n")};
  return Object.assign(p, extra);
}

function compact(v) {  // hpcsa.views.render.compact
  if (v === null || v === undefined || !isFinite(v) || v === 0) return "";
  const a = Math.abs(v);
  for (const [scale, suf] of [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
    if (a >= scale * 0.9995) return a / scale < 999.5 ? g3(v / scale) + suf : (v / scale).toFixed(0) + suf;
  }
  if (a < 0.01) return v.toExponential(2).replace(/e([+-])(\d)$/, "e$10$2");  // Python's "%.2e"
  return g3(v);
}

function g3(x) {  // Python's "%.3g"
  if (x === 0) return "0";
  const e = Math.floor(Math.log10(Math.abs(x)));
  if (e < -4 || e >= 3) {
    let s = x.toExponential(2).replace(/\.?0+e/, "e");
    return s.replace(/e([+-])(\d)$/, "e$10$2");
  }
  let s = x.toFixed(Math.max(0, 2 - e));
  if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  return s;
}

function pct(v, total) {
  if (v === null || !isFinite(v) || v === 0 || !total) return "";
  return (100 * v / total).toFixed(1) + "%";
}

function status(text, err = false) {
  const el = $("status");
  el.textContent = text;
  el.className = err ? "err" : "muted";
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v;  // CSP: no style attributes
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

// ----------------------------------------------------------------------------------------------- state

function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.get("view")) S.view = h.get("view");
  if (h.get("cols")) S.cols = h.get("cols").split(",").map(Number);
  if (h.get("sort")) S.sort = h.get("sort");
  if (h.get("filters")) S.filters = h.get("filters").split("\n").filter(Boolean);
  for (const k of ["flatten", "sel", "zoom", "depth", "t0", "t1"]) if (h.get(k) !== null) S[k] = Number(h.get(k));
  if (h.get("pane")) S.pane = h.get("pane");
}

function writeHash() {
  const h = new URLSearchParams();
  h.set("view", S.view); h.set("cols", S.cols.join(",")); h.set("sort", S.sort);
  if (S.filters.length) h.set("filters", S.filters.join("\n"));
  if (S.flatten) h.set("flatten", S.flatten);
  if (S.sel !== null) h.set("sel", S.sel);
  if (S.zoom !== null) h.set("zoom", S.zoom);
  h.set("pane", S.pane);
  if (S.pane === "trace") { h.set("depth", S.depth); if (S.t0 !== null) { h.set("t0", S.t0); h.set("t1", S.t1); } }
  history.replaceState(null, "", `${location.pathname}${location.search}#${h}`);
}

// ----------------------------------------------------------------------------------------------- the tree

function sides() {  // [column index, side] of the shown value cells, in the server's order
  const out = [];
  for (const i of S.cols) {
    const c = INFO.columns.find((x) => x.index === i);
    for (const s of c.sides) out.push([c, s]);
  }
  return out;
}

function renderHead() {
  const tr = $("tree-head");
  tr.replaceChildren();
  for (const [c, s] of sides()) {
    const key = `${c.index}:${s[0]}`;
    const th = el("th", {title: c.description || c.name, "data-sort": key, class: key === S.sort ? "sorted" : ""},
                  `${c.name} ${s === "inclusive" ? "(I)" : "(E)"}`);
    th.addEventListener("click", () => { S.sort = key; resetTree(); });
    tr.append(th);
  }
  tr.append(el("th", {class: "scope"}, "Scope"));
}

function rowEl(n, depth) {
  const {rec, expanded} = nodes.get(n);
  const tr = el("tr", {"data-node": n, "data-depth": depth, class: (S.sel === n ? "sel " : "") + (hot.has(n) ? "hot" : "")});
  const tog = el("span", {class: "tog"}, rec.children ? (expanded ? "▾" : "▸") : "");
  tog.addEventListener("click", (e) => { e.stopPropagation(); toggle(n); });
  const td = el("td", {class: "scope", style: `padding-left:${6 + 14 * depth}px`}, tog,
                el("span", {class: "label", title: rec.label}, rec.label));
  sides().forEach(([c, s], k) => {
    const v = rec.values[k];
    const cell = el("td", {class: "v", "data-v": v === null ? "" : String(v), "data-col": `${c.index}:${s[0]}`},
                    compact(v) || "");
    if (c.percent && v) cell.append(" ", el("span", {class: "pct"}, pct(v, c.total)));
    tr.append(cell);
  });
  tr.append(td);
  tr.addEventListener("click", () => select(n));
  tr.addEventListener("dblclick", () => toggle(n));
  return tr;
}

function renderTree() {
  const body = $("tree-body");
  const rows = [];
  const walk = (list, depth, total, parent) => {
    for (const n of list) {
      rows.push(rowEl(n, depth));
      const e = nodes.get(n);
      if (e.expanded && e.kids) walk(e.kids, depth + 1, e.total, n);
    }
    if (list.length < total) {
      const more = el("tr", {class: "more", "data-parent": parent},
                      el("td", {colspan: sides().length}),
                      el("td", {style: `padding-left:${20 + 14 * depth}px`}, `(${total - list.length} more)`));
      more.addEventListener("click", () => loadMore(parent));
      rows.push(more);
    }
  };
  walk(roots, 0, rootsTotal, -1);
  body.replaceChildren(...rows);
  const sel = body.querySelector("tr.sel");
  if (sel && !isVisible(sel)) sel.scrollIntoView({block: "center"});
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
    let last = path[path.indexOf(n) + 1];
    while (!e.kids.includes(last) && e.kids.length < e.total) await loadKids(n, e.kids.length);
    if (!e.kids.includes(last)) {  // a zero row not listed: fetch it alone
      const r = await api("api/rows", viewParams({nodes: last})); remember(r.rows); e.kids.push(last);
    }
  }
  return true;
}

async function resetTree(keepSel = true) {
  generation++;
  nodes = new Map(); hot = new Set();
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
  // open the first levels, as hpcviewer does
  let level = roots.slice(0, 1);
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
  status(`${INFO.contexts.toLocaleString()} contexts, ${INFO.profiles.toLocaleString()} profiles — ${S.view} view in ${Math.round(performance.now() - t)} ms`);
}

async function reveal(n, render = true) {
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

function select(n) {
  S.sel = n;
  for (const tr of document.querySelectorAll("#tree-body tr.sel")) tr.classList.remove("sel");
  document.querySelector(`#tree-body tr[data-node="${n}"]`)?.classList.add("sel");
  writeHash();
  paneUpdate();
}

async function hotPath() {
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

// ------------------------------------------------------------------------------------------- side panes

function paneUpdate() {
  for (const b of document.querySelectorAll("#panes .tab")) b.classList.toggle("active", b.dataset.pane === S.pane);
  for (const p of ["source", "profiles", "trace"]) $(`pane-${p}`).hidden = p !== S.pane;
  if (S.pane === "source") showSource();
  else if (S.pane === "profiles") showProfiles();
  else showTrace();
}

async function showSource() {
  if (S.sel === null) return;
  const g = S.sel;
  const s = await api("api/source", viewParams({node: S.sel}));
  if (g !== S.sel) return;
  await showFile(s, s.call_site || null, true);
}

async function showFile(s, other, otherIsSite) {  // a source location; ``other``: offered as a link
  const pre = $("source"), head = $("source-head");
  const links = [];
  if (other && other.file) {
    const b = el("button", {class: "link", id: "source-other"},
                 `${otherIsSite ? "call site" : "procedure"} ${other.file}:${other.line}`);
    b.addEventListener("click", () => showFile(other, s, !otherIsSite));
    links.push(" ", b);
  }
  if (!s.available) {
    head.replaceChildren(s.file ? `${s.file}:${s.line} — ${s.reason}` : s.reason, ...links);
    pre.replaceChildren();
    return;
  }
  const text = await api(`src/${s.src.split("/").map(encodeURIComponent).join("/")}`).catch(() => null);
  if (text === null) { head.replaceChildren(`${s.file}: not readable`, ...links); pre.replaceChildren(); return; }
  const lines = text.split("\n");
  head.replaceChildren(`${s.file}:${s.line}`, ...links);
  head.dataset.file = s.file; head.dataset.line = s.line;
  pre.replaceChildren(...lines.map((t, i) => el("span", {class: "ln" + (i + 1 === s.line ? " at" : ""), "data-n": i + 1}, t + "\n")));
  pre.querySelector(".ln.at")?.scrollIntoView({block: "center"});
}

async function showProfiles() {
  const head = $("dist-head");
  if (S.sel === null) return;
  let d;
  try { d = await api("api/distribution", viewParams({node: S.sel})); }
  catch (err) { head.textContent = err.message; $("dist-stats").replaceChildren(); clearCanvas("dist-sorted"); clearCanvas("dist-hist"); return; }
  head.textContent = `${d.label} (#${d.ctx_id}): ${d.metric}, ${d.scope}, over ${d.stats.profiles} profiles`;
  const keys = ["min", "mean", "max", "stddev", "cfvar", "imbalance"];
  $("dist-stats").replaceChildren(el("tr", {}, ...keys.map((k) => el("th", {}, k))),
    el("tr", {}, ...keys.map((k) => el("td", {"data-stat": k, "data-v": String(d.stats[k])}, k === "cfvar" ? d.stats[k].toFixed(2) : (compact(d.stats[k]) || "0")))));
  drawSorted(d); drawHist(d);
  $("dist-extremes").textContent = d.extremes.map((x) => `${x.label} (profile ${x.profile}): ${compact(x.value) || "0"}`).join(" · ");
}

function clearCanvas(id) { const c = $(id); c.getContext("2d").clearRect(0, 0, c.width, c.height); }

function axes(ctx, c, lo, hi, label) {
  ctx.fillStyle = "#66707a"; ctx.font = "10px sans-serif";
  ctx.fillText(compact(hi) || "0", 2, 10); ctx.fillText(compact(lo) || "0", 2, c.height - 14);
  ctx.fillText(label, c.width - ctx.measureText(label).width - 4, c.height - 3);
}

function drawSorted(d) {
  const c = $("dist-sorted"), ctx = c.getContext("2d");
  ctx.clearRect(0, 0, c.width, c.height);
  const xs = d.sorted.rank, ys = d.sorted.value, n = Math.max(1, d.stats.profiles - 1);
  const lo = Math.min(0, ...ys), hi = Math.max(...ys, lo + 1e-300);
  const X = (r) => 40 + (c.width - 50) * r / n, Y = (v) => c.height - 18 - (c.height - 30) * (v - lo) / (hi - lo || 1);
  ctx.strokeStyle = "#2b6cb0"; ctx.lineWidth = 1.5; ctx.beginPath();
  xs.forEach((r, i) => (i ? ctx.lineTo(X(r), Y(ys[i])) : ctx.moveTo(X(r), Y(ys[i]))));
  ctx.stroke();
  ctx.strokeStyle = "#c05621"; ctx.setLineDash([4, 3]); ctx.beginPath();
  ctx.moveTo(40, Y(d.stats.mean)); ctx.lineTo(c.width - 10, Y(d.stats.mean)); ctx.stroke(); ctx.setLineDash([]);
  axes(ctx, c, lo, hi, "profiles, sorted (dashed: mean)");
}

function drawHist(d) {
  const c = $("dist-hist"), ctx = c.getContext("2d");
  ctx.clearRect(0, 0, c.width, c.height);
  const counts = d.histogram.counts, edges = d.histogram.edges, peak = Math.max(1, ...counts);
  const w = (c.width - 50) / counts.length;
  ctx.fillStyle = "#4a90d9";
  counts.forEach((k, i) => { const h = (c.height - 30) * k / peak; ctx.fillRect(40 + i * w, c.height - 18 - h, w - 1, h); });
  ctx.fillStyle = "#66707a"; ctx.font = "10px sans-serif";
  ctx.fillText(String(peak), 2, 10);
  ctx.fillText(compact(edges[0]) || "0", 40, c.height - 3);
  const last = compact(edges[edges.length - 1]) || "0";
  ctx.fillText(last, c.width - ctx.measureText(last).width - 4, c.height - 3);
}

// ------------------------------------------------------------------------------------------------- trace

const T = {meta: null, busy: false, drag: null, win: null, hoverAt: 0, last: null};

function colorOf(id) {
  if (id < 0) return "#ffffff";
  const h = (id * 137.508) % 360, l = 45 + (id * 7 % 3) * 10;
  return `hsl(${h.toFixed(0)},65%,${l}%)`;
}

async function showTrace() {
  if (!INFO.trace) { $("trace-cursor").textContent = "This database has no trace.db (measure with hpcrun -t)."; return; }
  if (!T.meta) T.meta = await api("api/trace/meta");
  if (S.t0 === null || S.t1 === null) { S.t0 = T.meta.t_min; S.t1 = T.meta.t_max; }
  S.depth = Math.max(0, Math.min(S.depth, T.meta.max_depth));
  $("depth-n").textContent = S.depth;
  writeHash();
  await drawTrace();
}

async function drawTrace() {
  const c = $("trace"), ctx = c.getContext("2d");
  c.width = Math.max(200, Math.floor(c.clientWidth || 560));
  const rows = T.meta.rows, h = c.height;
  const params = {t0: Math.round(S.t0), t1: Math.round(S.t1), width: c.width, depth: S.depth, first: 0, count: rows, height: h};
  const d = await api("api/trace/pixels", params);
  T.last = d;
  ctx.clearRect(0, 0, c.width, h);
  const rh = h / d.rows.length;
  d.rows.forEach((r, k) => {
    let x = 0;
    const y0 = Math.floor(k * rh), y1 = Math.floor((k + 1) * rh);
    for (let i = 0; i < r.runs.length; i += 2) {
      ctx.fillStyle = colorOf(r.runs[i]); ctx.fillRect(x, y0, r.runs[i + 1], Math.max(1, y1 - y0));
      x += r.runs[i + 1];
    }
    if (T.meta.cpu_rows && r.row === T.meta.cpu_rows && k) { ctx.fillStyle = "#000"; ctx.fillRect(0, y0, c.width, 1); }
  });
  const span = (S.t1 - S.t0) / 1e9;
  $("trace-range").textContent = `${(((S.t0 - T.meta.t_min) / 1e9)).toFixed(4)} s – ${(((S.t1 - T.meta.t_min) / 1e9)).toFixed(4)} s (${span.toPrecision(3)} s), ${rows} rows (${T.meta.cpu_rows} CPU, ${rows - T.meta.cpu_rows} GPU)`;
  const legend = Object.entries(d.legend);
  c.dataset.legend = legend.map(([k, v]) => `${k}:${v}`).join("|");
  $("trace-legend").replaceChildren(...legend.slice(0, 24).map(([k, v]) =>
    el("span", {class: "key"}, el("span", {class: "swatch", style: `background:${colorOf(Number(k))}`}), v)));
}

function traceAt(ev) {
  const c = $("trace"), r = c.getBoundingClientRect();
  const x = (ev.clientX - r.left) * c.width / r.width, y = (ev.clientY - r.top) * c.height / r.height;
  const t = S.t0 + (S.t1 - S.t0) * x / c.width;
  const k = Math.min(T.last.rows.length - 1, Math.max(0, Math.floor(y / (c.height / T.last.rows.length))));
  return {x, t, row: T.last.rows[k].row, cssX: ev.clientX - r.left};
}

async function traceHover(ev) {
  if (!T.last) return;
  const at = traceAt(ev);
  if (T.drag) { showSel(T.drag.cssX, at.cssX); return; }
  const stamp = ++T.hoverAt;
  const p = await api("api/trace/callpath", {row: at.row, t: Math.round(at.t)});
  if (stamp !== T.hoverAt) return;
  $("trace-cursor").textContent = `${p.label} at ${((at.t - T.meta.t_min) / 1e9).toFixed(6)} s\n` +
    (p.path.length ? p.path.map((x) => "  ".repeat(Math.max(0, x.depth)) + x.label).join("\n") : "(no sample)");
  $("trace-cursor").dataset.nodes = p.path.map((x) => x.node).join(",");
}

function showSel(a, b) {
  const s = $("trace-sel");
  s.hidden = false; s.style.left = `${Math.min(a, b)}px`; s.style.width = `${Math.abs(b - a)}px`;
}

async function traceWindow(t0, t1) {
  T.win = [t0, t1];
  $("t-window").disabled = false;
  $("trace-summary").dataset.t0 = Math.round(t0); $("trace-summary").dataset.t1 = Math.round(t1);
  const w = await api("api/trace/window", {t0: Math.round(t0), t1: Math.round(t1), depth: S.depth});
  const rows = w.procedures.map((p) => el("tr", {"data-proc": p.name},
    el("td", {}, el("span", {class: "swatch", style: `background:${colorOf(p.color)}`}), p.name),
    el("td", {class: "v", "data-v": String(p.time)}, `${(p.time / 1e9).toPrecision(3)} s`),
    el("td", {class: "v"}, `${(100 * p.share).toFixed(1)}%`)));
  $("trace-summary").replaceChildren(
    el("div", {class: "muted"}, `window ${((t0 - T.meta.t_min) / 1e9).toFixed(6)} – ${((t1 - T.meta.t_min) / 1e9).toFixed(6)} s over ${w.rows} rows, depth ${S.depth}: time per procedure (${(w.idle / 1e9).toPrecision(3)} s without activity not counted)`),
    el("table", {}, ...rows), el("div", {class: "muted"}, w.more ? `(${w.more} more)` : ""));
}

function setupTrace() {
  const c = $("trace");
  c.addEventListener("mousemove", traceHover);
  c.addEventListener("mousedown", (ev) => { if (T.last) T.drag = traceAt(ev); });
  window.addEventListener("mouseup", (ev) => {
    if (!T.drag) return;
    const a = T.drag, b = traceAt(ev);
    T.drag = null;
    if (Math.abs(b.cssX - a.cssX) < 3) { $("trace-sel").hidden = true; return; }
    traceWindow(Math.min(a.t, b.t), Math.max(a.t, b.t));
  });
  c.addEventListener("wheel", (ev) => {  // zoom around the cursor
    if (!T.last) return;
    ev.preventDefault();
    const at = traceAt(ev), f = ev.deltaY < 0 ? 0.8 : 1.25;
    S.t0 = at.t - (at.t - S.t0) * f; S.t1 = at.t + (S.t1 - at.t) * f;
    clamp();
  }, {passive: false});
  const move = (f) => { const span = S.t1 - S.t0; S.t0 += f * span; S.t1 += f * span; clamp(); };
  const zoom = (f) => { const mid = (S.t0 + S.t1) / 2, half = (S.t1 - S.t0) * f / 2; S.t0 = mid - half; S.t1 = mid + half; clamp(); };
  $("t-left").onclick = () => move(-0.25);
  $("t-right").onclick = () => move(0.25);
  $("t-zoom-in").onclick = () => zoom(0.5);
  $("t-zoom-out").onclick = () => zoom(2);
  $("t-reset").onclick = () => { S.t0 = T.meta.t_min; S.t1 = T.meta.t_max; clamp(); };
  $("t-window").onclick = () => { if (T.win) { [S.t0, S.t1] = T.win; $("trace-sel").hidden = true; clamp(); } };
  $("depth-less").onclick = () => { S.depth = Math.max(0, S.depth - 1); showTrace(); };
  $("depth-more").onclick = () => { S.depth = Math.min(T.meta.max_depth, S.depth + 1); showTrace(); };
}

function clamp() {
  const span = Math.min(Math.max(S.t1 - S.t0, 1000), T.meta.t_max - T.meta.t_min || 1);
  S.t0 = Math.max(T.meta.t_min, Math.min(S.t0, T.meta.t_max - span)); S.t1 = S.t0 + span;
  showTrace();
}

// ------------------------------------------------------------------------------------------ header tools

function renderMetricMenu() {
  const list = $("metric-list");
  list.replaceChildren(...INFO.columns.map((c) => {
    const box = el("input", {type: "checkbox", value: c.index});
    box.checked = S.cols.includes(c.index);
    box.addEventListener("change", () => {
      S.cols = INFO.columns.filter((x) => x.index === c.index ? box.checked : S.cols.includes(x.index)).map((x) => x.index);
      if (!S.cols.length) { S.cols = [c.index]; box.checked = true; }
      if (!S.cols.includes(Number(S.sort.split(":")[0]))) S.sort = `${S.cols[0]}:i`;
      resetTree();
    });
    return el("label", {title: c.description}, box, ` $${c.index} ${c.name}`, el("span", {class: "muted"}, c.total ? `  ${compact(c.total)}` : ""));
  }));
}

function renderFilters() {
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

async function doSearch() {
  const q = $("search").value.trim(), ul = $("search-results");
  if (!q) { ul.hidden = true; return; }
  const r = await api("api/search", viewParams({q}));
  if (!r.nodes.length) { ul.replaceChildren(el("li", {class: "muted"}, "no match")); ul.hidden = false; return; }
  const rows = (await api("api/rows", viewParams({nodes: r.nodes.join(",")}))).rows;
  ul.replaceChildren(...rows.map((rec) => {
    const li = el("li", {"data-node": rec.node}, `${rec.label}  `, el("span", {class: "muted"}, compact(rec.values[0]) || ""));
    li.addEventListener("click", () => { ul.hidden = true; reveal(rec.node); });
    return li;
  }));
  ul.hidden = false;
}

function setupHeader() {
  for (const b of document.querySelectorAll("#views .tab")) {
    b.addEventListener("click", () => {
      S.view = b.dataset.view; S.sel = null; S.zoom = null; S.flatten = 0; markView(); resetTree(false);
    });
  }
  for (const b of document.querySelectorAll("#panes .tab")) b.addEventListener("click", () => { S.pane = b.dataset.pane; writeHash(); paneUpdate(); });
  $("flatten-more").onclick = () => { S.flatten++; S.sel = null; S.zoom = null; markView(); resetTree(false); };
  $("flatten-less").onclick = () => { if (S.flatten) { S.flatten--; S.sel = null; S.zoom = null; markView(); resetTree(false); } };
  $("hot").onclick = () => hotPath().catch((e) => status(e.message, true));
  $("zoom-in").onclick = () => { if (S.sel !== null) { S.zoom = S.sel; resetTree(); } };
  $("zoom-out").onclick = async () => {
    if (S.zoom === null) return;
    const {path} = await api("api/path", viewParams({node: S.zoom}));
    S.zoom = path.length > 1 ? path[path.length - 2] : null;
    resetTree();
  };
  $("filter-add").onclick = () => {
    const p = $("filter-pattern").value.trim();
    if (!p) return;
    S.filters.push(`${$("filter-mode").value}:${p}`); $("filter-pattern").value = "";
    renderFilters(); filtersChanged(true);
  };
  $("search").addEventListener("keydown", (e) => { if (e.key === "Enter") doSearch().catch((x) => status(x.message, true)); });
  $("share").onclick = async () => {
    writeHash();
    try { await navigator.clipboard.writeText(location.href); status("link copied"); }
    catch (e) { status(`link: ${location.href}`); }
  };
}

function markView() {
  for (const b of document.querySelectorAll("#views .tab")) b.classList.toggle("active", b.dataset.view === S.view);
  $("flatten-box").hidden = S.view !== "flat";
  $("flatten-n").textContent = S.flatten;
}

async function main() {
  try {
    INFO = await api("api/info");
  } catch (e) { status(`cannot read the database: ${e.message}`, true); return; }
  readHash();
  document.title = `${INFO.title} — hpcsa`;
  $("title").textContent = INFO.title;
  $("dbpath").textContent = `${INFO.path} · ${INFO.contexts.toLocaleString()} contexts · ${INFO.profiles.toLocaleString()} profiles`;
  const known = new Set(INFO.columns.map((c) => c.index));
  if (!S.cols || !S.cols.every((i) => known.has(i))) S.cols = INFO.default_columns;
  if (!S.sort || !S.cols.includes(Number(S.sort.split(":")[0]))) S.sort = `${S.cols[0]}:i`;
  setupHeader(); setupTrace(); renderMetricMenu(); renderFilters(); markView();
  await resetTree();
  paneUpdate();
  document.body.dataset.ready = "1";
}

async function followHash() {  // a pasted link in the same tab
  S.filters = []; S.sel = null; S.zoom = null; S.flatten = 0; S.t0 = null; S.t1 = null;
  readHash();
  renderMetricMenu(); renderFilters(); markView();
  await resetTree();
  paneUpdate();
}

function onKey(ev) {  // tree navigation: arrows move, right opens, left closes or goes to the parent
  if (ev.target.closest("input, select, textarea") || S.sel === null) return;
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
  document.querySelector("#tree-body tr.sel")?.scrollIntoView({block: "nearest"});
}

window.addEventListener("DOMContentLoaded", main);
window.addEventListener("keydown", onKey);
window.addEventListener("unhandledrejection", (ev) => status(ev.reason?.message || String(ev.reason), true));
window.addEventListener("hashchange", () => { if (INFO) followHash(); });
