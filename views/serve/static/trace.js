// hpcsa serve: the trace mode (hpctraceviewer's views). The main view shows the rows (grouped by process,
// labelled by id tuple) over a time window; hovering shows the call path under the pointer, a click picks
// the line of the depth view, a drag selects a time window for the statistics (with Shift: a range of rows
// to zoom into), the wheel zooms in time. The summary view stacks the procedures' shares per pixel column.
"use strict";

import {$, G, S, api, duration, status, writeHash} from "./util.js";
import {drawDepth, drawLabels, drawMain, drawRuler, drawSummary, fit, renderLegend, renderStats} from "./tracedraw.js";

const T = {meta: null, metaHide: null, last: null, drag: null, win: null, hoverAt: 0, drawn: 0, timing: {}};
window.__trace = T;  // tests and the benchmark read the timings of the last paint

function params(extra = {}) {
  return Object.assign({t0: Math.round(S.t0), t1: Math.round(S.t1), color: S.color, depth: S.depth,
                        hide_empty: S.hide ? 1 : 0}, extra);
}

async function loadMeta() {
  if (!T.meta || T.metaHide !== S.hide) {
    T.meta = await api("api/trace/meta", {hide_empty: S.hide ? 1 : 0});
    T.metaHide = S.hide;
  }
  const n = T.meta.rows;
  if (S.r0 === null || S.r1 === null || S.r1 > n || S.r0 >= S.r1) { S.r0 = 0; S.r1 = n; }
  if (S.trow !== null && S.trow >= n) S.trow = null;
}

export async function showTrace() {
  if (!G.info.trace) { $("trace-cursor").textContent = "This database has no trace.db (measure with hpcrun -t)."; return; }
  await loadMeta();
  if (S.t0 === null || S.t1 === null) { S.t0 = T.meta.t_min; S.t1 = T.meta.t_max; }
  S.depth = Math.max(0, Math.min(S.depth, T.meta.max_depth));
  $("depth-n").textContent = S.depth;
  $("color-mode").value = S.color;
  $("depth-box").classList.toggle("off", S.color !== "depth");
  $("hide-empty").checked = S.hide;
  writeHash();
  await drawTrace();
}

export async function drawTrace() {
  const t = performance.now();
  const c = $("trace"), ruler = $("trace-ruler"), sum = $("trace-summary-view");
  fit(c); fit(ruler); fit(sum);
  const stamp = ++T.drawn;
  const d = await api("api/trace/pixels", params({width: c.width, first: S.r0, count: S.r1 - S.r0, height: c.height}));
  if (stamp !== T.drawn) return;
  const got = performance.now();
  T.last = d;
  drawMain(c, d, T.meta);
  drawLabels($("trace-labels"), d, T.meta, c.height);
  drawRuler(ruler, S.t0, S.t1, T.meta.t_min);
  const counts = drawSummary(sum, d);
  renderLegend($("trace-legend"), d.legend, counts);
  c.dataset.legend = Object.entries(d.legend).map(([k, v]) => `${k}:${v.name}`).join("|");
  const m = T.meta;
  $("trace-range").textContent = `${duration(S.t0 - m.t_min, 4)} – ${duration(S.t1 - m.t_min, 4)} (${duration(S.t1 - S.t0)}), ` +
    `rows ${S.r0 + 1}–${S.r1} of ${m.rows.toLocaleString()}` + (S.hide ? ` with activity (of ${m.all_rows.toLocaleString()})` : "") +
    ` · ${m.groups.length.toLocaleString()} process${m.groups.length === 1 ? "" : "es"}, ${m.cpu_rows.toLocaleString()} CPU, ${(m.rows - m.cpu_rows).toLocaleString()} GPU`;
  T.timing = {request: got - t, paint: performance.now() - got, total: performance.now() - t};
  c.dataset.painted = String(T.drawn);
  status(`trace: ${d.rows.length.toLocaleString()} of ${(S.r1 - S.r0).toLocaleString()} rows × ${d.width} pixels in ${Math.round(T.timing.total)} ms`);
  if (S.trow !== null) await drawDepthView();
  else { $("depth-title").textContent = "click a row of the trace"; fit($("trace-depth")); $("trace-depth").getContext("2d").clearRect(0, 0, 9999, 9999); $("depth-labels").replaceChildren(); }
  if (T.win) await traceWindow(...T.win);
}

async function drawDepthView() {
  const c = $("trace-depth");
  fit(c);
  const dv = await api("api/trace/depth", params({row: S.trow, width: c.width}));
  drawDepth(c, $("depth-labels"), dv);
  $("depth-title").textContent = dv.label;
  c.dataset.row = String(S.trow);
  c.dataset.depths = String(dv.depths.length);
}

function traceAt(ev) {
  const c = $("trace"), r = c.getBoundingClientRect();
  const x = (ev.clientX - r.left) * c.width / r.width, y = (ev.clientY - r.top) * c.height / r.height;
  const t = S.t0 + (S.t1 - S.t0) * x / c.width;
  const n = T.last.rows.length;
  const k = Math.min(n - 1, Math.max(0, Math.floor(y / (c.height / n))));
  return {x, y, t, row: T.last.rows[k].row, cssX: ev.clientX - r.left, cssY: ev.clientY - r.top};
}

async function traceHover(ev) {
  if (!T.last || !T.last.rows.length) return;
  const at = traceAt(ev);
  if (T.drag) { showSel(T.drag, at); return; }
  const stamp = ++T.hoverAt;
  const p = await api("api/trace/callpath", {row: at.row, t: Math.round(at.t), hide_empty: S.hide ? 1 : 0});
  if (stamp !== T.hoverAt) return;
  const full = S.names === "full";
  $("trace-cursor").textContent = `${p.label} at ${duration(at.t - T.meta.t_min, 6)}\n` +
    (p.path.length ? p.path.map((x) => "  ".repeat(Math.max(0, x.depth)) + (full && x.full ? x.full : x.label)).join("\n") : "(no activity)");
  $("trace-cursor").dataset.nodes = p.path.map((x) => x.node).join(",");
  $("trace-cursor").dataset.row = String(at.row);
}

function showSel(a, b) {
  const s = $("trace-sel");
  s.hidden = false;
  if (a.shift) {  // rows
    s.classList.add("rows");
    s.style.left = "0px"; s.style.width = "100%";
    s.style.top = `${Math.min(a.cssY, b.cssY)}px`; s.style.height = `${Math.abs(b.cssY - a.cssY)}px`;
  } else {
    s.classList.remove("rows");
    s.style.top = "0px"; s.style.height = "100%";
    s.style.left = `${Math.min(a.cssX, b.cssX)}px`; s.style.width = `${Math.abs(b.cssX - a.cssX)}px`;
  }
}

export async function traceWindow(t0, t1) {
  T.win = [t0, t1];
  $("t-window").disabled = false;
  const w = await api("api/trace/window", params({t0: Math.round(t0), t1: Math.round(t1), first: S.r0, count: S.r1 - S.r0}));
  renderStats($("trace-stats"), w, T.meta.t_min);
}

function clamp() {
  const full = T.meta.t_max - T.meta.t_min || 1;
  const span = Math.min(Math.max(S.t1 - S.t0, 1000), full);
  S.t0 = Math.max(T.meta.t_min, Math.min(S.t0, T.meta.t_max - span)); S.t1 = S.t0 + span;
  showTrace().catch((e) => status(e.message, true));
}

export function zoomStep(f) {  // zoom around the middle by a factor (the benchmark's step)
  const mid = (S.t0 + S.t1) / 2, half = (S.t1 - S.t0) * f / 2;
  S.t0 = mid - half; S.t1 = mid + half; clamp();
}

export function setupTrace() {
  const c = $("trace");
  c.addEventListener("mousemove", traceHover);
  c.addEventListener("mousedown", (ev) => { if (T.last) T.drag = Object.assign(traceAt(ev), {shift: ev.shiftKey}); });
  window.addEventListener("mouseup", (ev) => {
    if (!T.drag) return;
    const a = T.drag, b = traceAt(ev);
    T.drag = null;
    $("trace-sel").hidden = true;
    if (a.shift && Math.abs(b.cssY - a.cssY) >= 3) {  // zoom into the rows dragged over
      const lo = Math.min(a.row, b.row), hi = Math.max(a.row, b.row);
      S.r0 = lo; S.r1 = hi + 1; showTrace();
      return;
    }
    if (Math.abs(b.cssX - a.cssX) < 3) {  // a click: this row's depth view
      S.trow = a.row; writeHash(); drawDepthView();
      return;
    }
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
  $("t-left").onclick = () => move(-0.25);
  $("t-right").onclick = () => move(0.25);
  $("t-zoom-in").onclick = () => zoomStep(0.5);
  $("t-zoom-out").onclick = () => zoomStep(2);
  $("t-reset").onclick = () => { S.t0 = T.meta.t_min; S.t1 = T.meta.t_max; S.r0 = 0; S.r1 = T.meta.rows; clamp(); };
  $("t-window").onclick = () => { if (T.win) { [S.t0, S.t1] = T.win; clamp(); } };
  $("depth-less").onclick = () => { S.depth = Math.max(0, S.depth - 1); showTrace(); };
  $("depth-more").onclick = () => { S.depth = Math.min(T.meta.max_depth, S.depth + 1); showTrace(); };
  $("color-mode").addEventListener("change", () => { S.color = $("color-mode").value; showTrace(); });
  $("hide-empty").addEventListener("change", () => {
    S.hide = $("hide-empty").checked; S.r0 = null; S.r1 = null; S.trow = null; showTrace();
  });
  window.addEventListener("resize", () => { if (S.mode === "trace" && T.meta) drawTrace(); });
  window.addEventListener("hpcsa-resize", () => { if (S.mode === "trace" && T.meta) drawTrace(); });
}

export function resetTraceState() { T.win = null; }
