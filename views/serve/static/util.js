// hpcsa serve: what every part of the page shares -- the state kept in the URL, requests, number formats.
"use strict";

export const TOKEN = new URLSearchParams(location.search).get("token") || "";
export const $ = (id) => document.getElementById(id);

// The state kept in the URL's hash (a copied link reopens the same view).
export const S = {
  mode: "tree", view: "top-down", cols: null, sort: null, filters: [], flatten: 0, sel: null, zoom: null,
  pane: "source", threads: "", derived: [], names: "short",
  depth: 1, color: "depth", hide: false, t0: null, t1: null, r0: null, r1: null, trow: null,
};
export const G = {info: null};  // the database's /api/info

window.__busy = 0;  // requests in flight (tests wait for 0)

export async function api(path, params = {}) {
  const q = new URLSearchParams(params);
  if (S.names === "full") q.set("names", "full");
  window.__busy++;
  try {
    const r = await fetch(`${path}?${q}`, {headers: {"X-Hpcsa-Token": TOKEN}});
    const type = r.headers.get("Content-Type") || "";
    const body = type.startsWith("application/json") ? await r.json() : await r.text();
    if (!r.ok) throw new Error(body.error || `${r.status}`);
    return body;
  } finally { window.__busy--; }
}

export function viewParams(extra = {}) {
  const p = {view: S.view, columns: S.cols.join(","), sort: S.sort, flatten: S.flatten,
             filters: S.filters.join("\n"), threads: S.threads};
  return Object.assign(p, extra);
}

// hpcsa.views.render.notation: one notation for every value of a metric's columns, chosen from the values
// shown (zeros, shown blank, do not count): integers for counts, fixed when every magnitude lies in
// [FIXED_FROM, FIXED_BELOW) within a factor FIXED_SPAN (the smallest with SIGNIFICANT digits), else scientific.
const FIXED_FROM = 0.01, FIXED_BELOW = 1e5, FIXED_SPAN = 100, INTEGERS_BELOW = 1e6, SIGNIFICANT = 3;

export function notation(values) {
  let lo = Infinity, hi = 0, integral = true;
  for (const v of values) {
    if (v === null || v === undefined || !isFinite(v) || v === 0) continue;
    const a = Math.abs(v);
    lo = Math.min(lo, a); hi = Math.max(hi, a);
    if (a !== Math.round(a)) integral = false;
  }
  let sci = false, dec = 0;
  if (hi === 0 || (hi < INTEGERS_BELOW && integral)) dec = 0;
  else if (lo >= FIXED_FROM && hi < FIXED_BELOW && hi < lo * FIXED_SPAN) dec = Math.max(0, SIGNIFICANT - 1 - Math.floor(Math.log10(lo)));
  else { sci = true; dec = SIGNIFICANT - 1; }
  return (v, zero = "") => {
    if (v === null || v === undefined || !isFinite(v) || v === 0) return zero;
    return sci ? v.toExponential(dec).replace(/e([+-])(\d)$/, "e$10$2") : v.toFixed(dec);  // Python's "%.2e"
  };
}

export function compact(v) {  // hpcsa.views.render.compact: one value on its own (columns: notation)
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
    const s = x.toExponential(2).replace(/\.?0+e/, "e");
    return s.replace(/e([+-])(\d)$/, "e$10$2");
  }
  let s = x.toFixed(Math.max(0, 2 - e));
  if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  return s;
}

export function pct(v, total) {
  if (v === null || !isFinite(v) || v === 0 || !total) return "";
  return (100 * v / total).toFixed(1) + "%";
}

// A duration in ns as the run's clock shows it: s, ms, µs or ns with three significant digits.
export function duration(ns, digits = 3) {
  const a = Math.abs(ns);
  if (a >= 1e9 || a === 0) return `${(ns / 1e9).toPrecision(digits)} s`;
  if (a >= 1e6) return `${(ns / 1e6).toPrecision(digits)} ms`;
  if (a >= 1e3) return `${(ns / 1e3).toPrecision(digits)} µs`;
  return `${Math.round(ns)} ns`;
}

export function status(text, err = false) {
  const e = $("status");
  e.textContent = text;
  e.className = err ? "err" : "muted";
}

export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v;  // CSP: no style attributes
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

// A procedure's colour: the same id, the same colour, in every view.
export function colorOf(id) {
  if (id < 0) return "#ffffff";
  const h = (id * 137.508) % 360, l = 42 + (id * 7 % 3) * 10;
  return `hsl(${h.toFixed(0)},62%,${l}%)`;
}

// Where a user drags a splitter: the pane after it (``side``) takes the width left of the pointer.
export function splitter(bar, side, key) {
  const saved = Number(localStorage.getItem(key));
  if (saved > 150) side.style.flexBasis = `${saved}px`;
  bar.addEventListener("pointerdown", (ev) => {
    ev.preventDefault();
    bar.setPointerCapture(ev.pointerId);
    const move = (e) => {
      const box = bar.parentElement.getBoundingClientRect();
      const w = Math.max(200, Math.min(box.right - e.clientX, box.width - 240));
      side.style.flexBasis = `${w}px`;
      window.dispatchEvent(new Event("hpcsa-resize"));
    };
    const up = () => {
      bar.removeEventListener("pointermove", move); bar.removeEventListener("pointerup", up);
      localStorage.setItem(key, String(parseInt(side.style.flexBasis, 10)));
    };
    bar.addEventListener("pointermove", move); bar.addEventListener("pointerup", up);
  });
}

// ----------------------------------------------------------------------------------------------- state

const NUMBERS = ["flatten", "sel", "zoom", "depth", "t0", "t1", "r0", "r1", "trow"];

export function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.get("mode")) S.mode = h.get("mode") === "trace" ? "trace" : "tree";
  if (h.get("view")) S.view = h.get("view");
  if (h.get("cols")) S.cols = h.get("cols").split(",").map(Number);
  if (h.get("sort")) S.sort = h.get("sort");
  if (h.get("filters")) S.filters = h.get("filters").split("\n").filter(Boolean);
  if (h.get("derived")) S.derived = h.get("derived").split("\n").filter(Boolean);
  if (h.get("threads")) S.threads = h.get("threads");
  if (h.get("names")) S.names = h.get("names") === "full" ? "full" : "short";
  if (h.get("color")) S.color = h.get("color") === "leaf" ? "leaf" : "depth";
  if (h.get("hide")) S.hide = h.get("hide") === "1";
  for (const k of NUMBERS) if (h.get(k) !== null) S[k] = Number(h.get(k));
  if (h.get("pane")) S.pane = h.get("pane");
}

export function writeHash() {
  const h = new URLSearchParams();
  if (S.mode === "trace") h.set("mode", "trace");
  h.set("view", S.view); h.set("cols", S.cols.join(",")); h.set("sort", S.sort);
  if (S.filters.length) h.set("filters", S.filters.join("\n"));
  if (S.derived.length) h.set("derived", S.derived.join("\n"));
  if (S.threads) h.set("threads", S.threads);
  if (S.names === "full") h.set("names", "full");
  if (S.flatten) h.set("flatten", S.flatten);
  if (S.sel !== null) h.set("sel", S.sel);
  if (S.zoom !== null) h.set("zoom", S.zoom);
  h.set("pane", S.pane);
  if (S.mode === "trace") {
    h.set("color", S.color); h.set("depth", S.depth);
    if (S.hide) h.set("hide", "1");
    for (const k of ["t0", "t1", "r0", "r1", "trow"]) if (S[k] !== null) h.set(k, Math.round(S[k]));
  }
  history.replaceState(null, "", `${location.pathname}${location.search}#${h}`);
}
