// hpcsa serve: drawing the trace views (hpctraceviewer's main, depth and summary views), the time ruler, the
// row labels, the legend and the window statistics. Everything is drawn per pixel from the server's colour
// runs, never per trace record.
"use strict";

import {$, S, colorOf, duration, el} from "./util.js";

export function fit(c) {  // the canvas's drawing size follows its box (panes are resizable)
  const w = Math.max(100, Math.floor(c.clientWidth)), h = Math.max(20, Math.floor(c.clientHeight));
  if (c.width !== w) c.width = w;
  if (c.height !== h) c.height = h;
}

// The main view: one band per drawn row, a line between processes (and between CPU threads and GPU streams).
export function drawMain(c, d, meta) {
  const ctx = c.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, c.width, c.height);
  const n = d.rows.length, rh = c.height / Math.max(n, 1);
  d.rows.forEach((r, k) => {
    const y0 = Math.floor(k * rh), h = Math.max(1, Math.floor((k + 1) * rh) - y0);
    let x = 0;
    for (let i = 0; i < r.runs.length; i += 2) {
      if (r.runs[i] >= 0) { ctx.fillStyle = colorOf(r.runs[i]); ctx.fillRect(x, y0, r.runs[i + 1], h); }
      x += r.runs[i + 1];
    }
    const prev = k ? d.rows[k - 1].row : null;
    if (prev !== null && (meta.group[prev] !== meta.group[r.row] || meta.gpu[prev] !== meta.gpu[r.row]) && rh >= 2) {
      ctx.fillStyle = meta.group[prev] !== meta.group[r.row] ? "#333" : "#999";
      ctx.fillRect(0, y0, c.width, 1);
    }
  });
}

// Row labels as text: every drawn row has its label (id tuple: thread or stream), the first row of each
// process its process; rows too thin for text keep it for reading out and hovering.
export function drawLabels(box, d, meta, height) {
  const n = d.rows.length, rh = height / Math.max(n, 1);
  const out = [];
  let last = -1, textAt = -Infinity;
  d.rows.forEach((r, k) => {
    const g = meta.group[r.row], first = g !== last, y = Math.floor(k * rh);
    last = g;
    const label = meta.labels[r.row], proc = meta.groups[g];
    const div = el("div", {class: "rl" + (first ? " first" : "") + (rh < 9 ? " thin" : ""), "data-row": r.row,
                           "data-label": label, "data-process": proc, title: `${proc} ${label}`,
                           style: `top:${y}px;height:${Math.max(1, Math.floor(rh))}px`});
    if (rh >= 9) div.append(first ? el("b", {}, proc + " ") : "", label);
    else if (first && y - textAt >= 11) {  // thin rows: a process's name where there is room for it
      div.classList.add("named");
      div.append(el("b", {}, proc));
      textAt = y;
    } else div.append(el("span", {class: "hidden-text"}, `${proc} ${label}`));
    out.push(div);
  });
  box.replaceChildren(...out);
}

// The time ruler: ticks at 1, 2 or 5 times a power of ten, labelled from the start of the run.
export function drawRuler(c, t0, t1, origin) {
  const ctx = c.getContext("2d");
  ctx.clearRect(0, 0, c.width, c.height);
  const span = Math.max(t1 - t0, 1), per = span / c.width;
  let step = Math.pow(10, Math.floor(Math.log10(per * 90)));
  for (const m of [1, 2, 5, 10]) if (step * m / per >= 90) { step *= m; break; }
  const unit = step >= 1e9 ? [1e9, "s"] : step >= 1e6 ? [1e6, "ms"] : step >= 1e3 ? [1e3, "µs"] : [1, "ns"];
  const digits = Math.max(0, Math.ceil(-Math.log10(step / unit[0]) + 1e-9));
  ctx.strokeStyle = "#66707a"; ctx.fillStyle = "#3c454e"; ctx.font = "11px sans-serif";
  ctx.beginPath(); ctx.moveTo(0, c.height - 0.5); ctx.lineTo(c.width, c.height - 0.5); ctx.stroke();
  const ticks = [];
  for (let t = Math.ceil((t0 - origin) / step) * step; t + origin <= t1; t += step) {
    const x = Math.round((t + origin - t0) / per) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, c.height - 7); ctx.lineTo(x, c.height); ctx.stroke();
    const text = `${(t / unit[0]).toFixed(digits)} ${unit[1]}`;
    ctx.fillText(text, Math.min(x + 3, c.width - ctx.measureText(text).width - 2), c.height - 9);
    ticks.push(text);
  }
  c.dataset.ticks = ticks.join("|");
  c.dataset.unit = unit[1];
}

// The summary view: per pixel column, the share of each procedure among the drawn rows active there (stacked,
// largest at the bottom; a column where no row is active is empty); returns the pixel count of every colour
// (the legend's order).
export function drawSummary(c, d) {
  const ctx = c.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, c.width, c.height);
  const width = d.width, counts = new Map(), perColumn = Array.from({length: width}, () => new Map());
  for (const r of d.rows) {
    let x = 0;
    for (let i = 0; i < r.runs.length; i += 2) {
      const id = r.runs[i], n = r.runs[i + 1];
      if (id >= 0) {
        counts.set(id, (counts.get(id) || 0) + n);
        for (let j = x; j < x + n; j++) perColumn[j].set(id, (perColumn[j].get(id) || 0) + 1);
      }
      x += n;
    }
  }
  const rank = [...counts.entries()].sort((a, b) => b[1] - a[1]).map((e) => e[0]);
  const order = new Map(rank.map((id, i) => [id, i]));
  const sx = c.width / width;
  for (let j = 0; j < width; j++) {
    let y = c.height, rows = 0;
    for (const k of perColumn[j].values()) rows += k;
    for (const [id, k] of [...perColumn[j].entries()].sort((a, b) => order.get(a[0]) - order.get(b[0]))) {
      const h = c.height * k / rows;
      ctx.fillStyle = colorOf(id); ctx.fillRect(j * sx, y - h, Math.ceil(sx), h);
      y -= h;
    }
  }
  c.dataset.colors = rank.join(",");
  return counts;
}

// The depth view of one line: one band per call-path depth.
export function drawDepth(c, labels, dv) {
  const ctx = c.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, c.width, c.height);
  const n = Math.max(dv.depths.length, 1), rh = c.height / n;
  dv.depths.forEach((r, k) => {
    const y0 = Math.floor(k * rh), h = Math.max(1, Math.floor((k + 1) * rh) - y0);
    let x = 0;
    for (let i = 0; i < r.runs.length; i += 2) {
      if (r.runs[i] >= 0) { ctx.fillStyle = colorOf(r.runs[i]); ctx.fillRect(x, y0, r.runs[i + 1], h); }
      x += r.runs[i + 1];
    }
  });
  labels.replaceChildren(...dv.depths.map((r, k) => el("div", {class: "rl" + (rh < 9 ? " thin" : ""), "data-depth": r.depth,
    style: `top:${Math.floor(k * rh)}px;height:${Math.max(1, Math.floor(rh))}px`}, rh >= 9 ? `depth ${r.depth}` : "")));
}

// The legend: short names (the full one on hover, or shown with the full-names switch), by share.
export function renderLegend(box, legend, counts) {
  const ids = Object.keys(legend).map(Number).sort((a, b) => (counts.get(b) || 0) - (counts.get(a) || 0));
  const total = [...counts.values()].reduce((a, b) => a + b, 0) || 1;
  const full = S.names === "full";
  box.replaceChildren(...ids.map((id) => {
    const e = legend[String(id)], name = full && e.full ? e.full : e.name;
    return el("div", {class: "key", "data-color": id, "data-name": e.name, title: e.full || e.name},
              el("span", {class: "swatch", style: `background:${colorOf(id)}`}),
              el("span", {class: "name"}, name),
              el("span", {class: "share muted"}, counts.get(id) ? `${(100 * counts.get(id) / total).toFixed(1)}%` : ""));
  }));
}

// The window statistics: presence, activity and time per procedure within the selected window.
export function renderStats(box, w, origin) {
  const full = S.names === "full";
  const rows = w.procedures.map((p) => el("tr", {"data-proc": p.name, title: p.full || p.name},
    el("td", {}, el("span", {class: "swatch", style: `background:${colorOf(p.color)}`}), full && p.full ? p.full : p.name),
    el("td", {class: "v", "data-v": String(p.time)}, duration(p.time)),
    el("td", {class: "v"}, `${(100 * p.share).toFixed(1)}%`)));
  const facts = [["window", duration(w.window)], ["rows", w.rows.toLocaleString()],
                 ["rows × window", duration(w.capacity)], ["lines present", duration(w.present)],
                 ["active", duration(w.busy)], ["no activity", duration(w.idle)]];
  box.replaceChildren(
    el("table", {class: "facts"}, ...facts.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {class: "v"}, v)))),
    el("div", {class: "muted"}, `time per procedure (${w.color === "leaf" ? "leaf procedures" : `depth ${w.depth}`}), thread-seconds:`),
    el("table", {class: "procs"}, ...rows), el("div", {class: "muted"}, w.more ? `(${w.more} more)` : ""));
  for (const [k, v] of Object.entries({present: w.present, capacity: w.capacity, busy: w.busy, idle: w.idle,
                                       t0: w.t0, t1: w.t1, rows: w.rows})) box.dataset[k] = String(v);
  $("trace-stats-title").textContent = `Window statistics: ${duration(w.t0 - origin, 4)} – ${duration(w.t1 - origin, 4)}`;
}
