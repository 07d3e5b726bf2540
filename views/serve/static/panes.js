// hpcsa serve: the side panes of the tree views -- the source of the selected scope and its values over the
// profiles (hpcviewer's source pane and per-thread plots). Both follow the selection in every view.
"use strict";

import {$, S, api, compact, el, viewParams, writeHash} from "./util.js";

let shownFor = null;  // the (view, node) whose source or plot the pane shows

export function paneUpdate() {
  for (const b of document.querySelectorAll("#panes .tab")) b.classList.toggle("active", b.dataset.pane === S.pane);
  for (const p of ["source", "profiles"]) $(`pane-${p}`).hidden = p !== S.pane;
  if (S.mode !== "tree") return;
  if (S.pane === "source") showSource();
  else showProfiles();
}

function clearSource(text) {
  $("source-head").replaceChildren(text);
  delete $("source-head").dataset.file; delete $("source-head").dataset.line;
  $("source").replaceChildren();
}

async function showSource() {
  if (S.sel === null) { shownFor = null; clearSource("Select a line, loop or procedure."); return; }
  const key = `${S.view}/${S.flatten}/${S.sel}`;
  const s = await api("api/source", viewParams({node: S.sel})).catch((e) => ({error: e.message}));
  if (key !== `${S.view}/${S.flatten}/${S.sel}`) return;  // the selection moved on
  shownFor = key;
  if (s.error) { clearSource(s.error); return; }
  await showFile(s, s.call_site || null, true);
}

async function showFile(s, other, otherIsSite) {  // a source location; ``other``: offered as a link
  const pre = $("source"), head = $("source-head");
  const links = [];
  if (other && other.file) {
    const b = el("button", {class: "link", id: "source-other"},
                 `${otherIsSite ? "call site" : "procedure"} ${short(other.original || other.file)}:${other.line}`);
    b.addEventListener("click", () => showFile(other, s, !otherIsSite));
    links.push(" ", b);
  }
  const where = s.original || s.file;
  if (!s.available) {
    head.replaceChildren(s.file ? `${where}:${s.line} — ${s.reason}` : s.reason, ...links);
    head.dataset.file = s.file || ""; head.dataset.line = s.line;
    pre.replaceChildren();
    return;
  }
  const text = await api(`src/${s.src.split("/").map(encodeURIComponent).join("/")}`).catch(() => null);
  if (text === null) { head.replaceChildren(`${where}: not readable`, ...links); pre.replaceChildren(); return; }
  const lines = text.split("\n");
  head.replaceChildren(el("span", {class: "path", title: `copy in the database: ${s.file}`}, `${where}:${s.line}`), ...links);
  head.dataset.file = s.file; head.dataset.line = s.line; head.dataset.original = where;
  pre.replaceChildren(...lines.map((t, i) => el("span", {class: "ln" + (i + 1 === s.line ? " at" : ""), "data-n": i + 1}, t + "\n")));
  pre.querySelector(".ln.at")?.scrollIntoView({block: "center"});
}

function short(path) { return path.split("/").pop(); }

async function showProfiles() {
  const head = $("dist-head");
  if (S.sel === null) {
    head.textContent = "Select a calling context in the top-down view.";
    $("dist-stats").replaceChildren(); clearCanvas("dist-sorted"); clearCanvas("dist-hist"); $("dist-extremes").textContent = "";
    return;
  }
  let d;
  try { d = await api("api/distribution", viewParams({node: S.sel})); }
  catch (err) { head.textContent = err.message; $("dist-stats").replaceChildren(); clearCanvas("dist-sorted"); clearCanvas("dist-hist"); return; }
  head.textContent = `${d.label} (#${d.ctx_id}): ${d.metric}, ${d.scope}, over the ${d.stats.profiles} profiles where it is present` +
    (d.lacking ? ` (${d.lacking} of ${d.compared} lack it)` : "");
  head.dataset.lacking = d.lacking;
  const keys = ["min", "mean", "max", "stddev", "cfvar", "imbalance"];
  $("dist-stats").replaceChildren(el("tr", {}, ...keys.map((k) => el("th", {}, k))),
    el("tr", {}, ...keys.map((k) => el("td", {"data-stat": k, "data-v": String(d.stats[k])}, k === "cfvar" ? d.stats[k].toFixed(2) : (compact(d.stats[k]) || "0")))));
  drawSorted(d); drawHist(d);
  $("dist-extremes").replaceChildren(...d.extremes.map((x) => el("div", {"data-profile": x.profile},
    `${x.label}: ${compact(x.value) || "0"}`)));
}

function fit(c) {  // the canvas's drawing size follows its box (the pane is resizable)
  const w = Math.max(200, Math.floor(c.clientWidth || 400));
  if (c.width !== w) c.width = w;
}

function clearCanvas(id) { const c = $(id); c.getContext("2d").clearRect(0, 0, c.width, c.height); }

function axes(ctx, c, lo, hi, label) {
  ctx.fillStyle = "#66707a"; ctx.font = "10px sans-serif";
  ctx.fillText(compact(hi) || "0", 2, 10); ctx.fillText(compact(lo) || "0", 2, c.height - 14);
  ctx.fillText(label, c.width - ctx.measureText(label).width - 4, c.height - 3);
}

function drawSorted(d) {
  const c = $("dist-sorted"); fit(c);
  const ctx = c.getContext("2d");
  ctx.clearRect(0, 0, c.width, c.height);
  const xs = d.sorted.rank, ys = d.sorted.value, n = Math.max(1, d.stats.profiles - 1);
  const lo = Math.min(0, ...ys), hi = Math.max(...ys, lo + 1e-300);
  const X = (r) => 40 + (c.width - 50) * r / n, Y = (v) => c.height - 18 - (c.height - 30) * (v - lo) / (hi - lo || 1);
  ctx.strokeStyle = "#2b6cb0"; ctx.lineWidth = 1.5; ctx.beginPath();
  xs.forEach((r, i) => (i ? ctx.lineTo(X(r), Y(ys[i])) : ctx.moveTo(X(r), Y(ys[i]))));
  ctx.stroke();
  ctx.strokeStyle = "#c05621"; ctx.setLineDash([4, 3]); ctx.beginPath();
  ctx.moveTo(40, Y(d.stats.mean)); ctx.lineTo(c.width - 10, Y(d.stats.mean)); ctx.stroke(); ctx.setLineDash([]);
  axes(ctx, c, lo, hi, "profiles where present, sorted (dashed: mean)");
}

function drawHist(d) {
  const c = $("dist-hist"); fit(c);
  const ctx = c.getContext("2d");
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

export function setupPanes() {
  for (const b of document.querySelectorAll("#panes .tab")) {
    b.addEventListener("click", () => { S.pane = b.dataset.pane; writeHash(); paneUpdate(); });
  }
}

export function paneShows() { return shownFor; }
