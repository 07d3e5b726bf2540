// The page of `hpcsa serve DB1 DB2 ...` (hpcsa.views.compare.serve): the run catalog and the aligned tree,
// a column per run, the change against the baseline highlighted. Data from /api/compare/info and /children.
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const state = { info: null, metric: null, side: "inclusive", sort: "value" };

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

async function api(name, params = {}) {
  const q = new URLSearchParams({ ...params, token });
  const r = await fetch(`/api/compare/${name}?${q}`);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function num(v) {
  if (v === null || v === undefined) return "";
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e5 || a < 1e-3 ? v.toExponential(2) : v.toPrecision(4).replace(/\.?0+$/, "");
}

function change(row) {  // [text, class]
  if (row.ratio === null) return row.change === null ? ["", ""] : [row.change > 0 ? "new" : "", ""];
  const rel = row.ratio - 1;
  const cls = rel > state.info.highlight ? "up" : rel < -state.info.highlight ? "down" : "";
  return [rel === 0 ? "" : `${rel > 0 ? "+" : ""}${(100 * rel).toFixed(1)}%`, cls];
}

function renderCatalog(info) {
  const cols = ["label", "program", "ranks", "threads", "gpu_streams", "hosts", "start", "duration_s", "contexts"];
  const metaKeys = [...new Set(info.runs.flatMap(r => Object.keys(r).filter(k => k.startsWith("meta."))))];
  const table = document.getElementById("catalog");
  table.replaceChildren(el("tr", {}, ...[...cols, ...metaKeys].map(c => el("th", { text: c.replace("_", " ") }))));
  info.runs.forEach((r, i) => {
    const tr = el("tr", { class: i === info.baseline ? "baseline run" : "run" },
      ...[...cols, ...metaKeys].map(c => el("td", { text: (r[c] ?? "-") + (c === "label" && i === info.baseline ? " (baseline)" : "") })));
    table.append(tr);
  });
}

function header(info) {
  const head = document.querySelector("#tree thead");
  head.replaceChildren(el("tr", {},
    ...info.runs.map(r => el("th", { text: r.label })), el("th", { text: "mean" }), el("th", { text: "cfvar" }),
    el("th", { text: "Δ" }), el("th", { class: "scope", text: "scope" })));
}

function rowOf(row, depth) {
  const tr = el("tr", { "data-id": String(row.id), "data-depth": String(depth), class: "node" });
  row.values.forEach((v, i) => {
    const missing = !row.present[i];
    tr.append(el("td", { class: missing ? "v missing" : "v", text: missing ? "—" : v === null ? "n/a" : num(v) }));
  });
  tr.append(el("td", { class: "v", text: num(row.mean) }));
  tr.append(el("td", { class: "v", text: row.cfvar === null ? "" : `${(100 * row.cfvar).toFixed(1)}%` }));
  const [text, cls] = change(row);
  tr.append(el("td", { class: `v change ${cls}`.trim(), text }));
  const toggle = el("span", { class: "toggle", text: row.children ? "▸" : "" });
  const title = row.names ? Object.entries(row.names).map(([k, v]) => `${k}: ${v}`).join("\n") : row.path;
  const indent = el("span");
  indent.style.paddingLeft = `${depth * 14}px`;  // CSSOM: the server's policy allows no style attribute
  const scope = el("td", { class: "scope", title }, indent, toggle, el("span", { class: "label", text: row.label }));
  tr.append(scope);
  if (row.children) toggle.addEventListener("click", () => expand(tr, row.id, depth + 1, toggle));
  return tr;
}

async function expand(tr, id, depth, toggle) {
  if (tr.dataset.open === "1") {  // collapse: drop the rows below that are deeper
    let next = tr.nextElementSibling;
    while (next && Number(next.dataset.depth) >= depth) { const n = next.nextElementSibling; next.remove(); next = n; }
    tr.dataset.open = "0";
    toggle.textContent = "▸";
    return;
  }
  const got = await api("children", { node: id, metric: state.metric, side: state.side, sort: state.sort });
  let after = tr;
  for (const row of got.children) { const r = rowOf(row, depth); after.after(r); after = r; }
  tr.dataset.open = "1";
  toggle.textContent = "▾";
}

async function reload() {
  const body = document.querySelector("#tree tbody");
  const got = await api("children", { node: -1, metric: state.metric, side: state.side, sort: state.sort });
  body.replaceChildren(...got.children.map(r => rowOf(r, 0)));
  // open the first levels along the costliest path
  let tr = body.querySelector("tr.node");
  for (let d = 0; tr && d < 3; d++) {
    const toggle = tr.querySelector(".toggle");
    if (!toggle.textContent) break;
    await expand(tr, Number(tr.dataset.id), d + 1, toggle);
    tr = tr.nextElementSibling;
  }
  document.getElementById("status").textContent = "";
  document.body.dataset.ready = "1";
}

async function main() {
  try {
    const info = state.info = await api("info");
    state.metric = info.metrics[0].name;
    document.getElementById("summary").textContent =
      `${info.runs.length} runs, ${info.contexts.toLocaleString()} aligned contexts, ${info.view} view` +
      (info.vendor_neutral ? ", vendor-neutral" : "");
    const sel = document.getElementById("metric");
    sel.replaceChildren(...info.metrics.map(m => el("option", { value: m.name, text: m.name })));
    for (const [id, key] of [["metric", "metric"], ["side", "side"], ["sort", "sort"]]) {
      document.getElementById(id).addEventListener("change", e => { state[key] = e.target.value; reload(); });
    }
    renderCatalog(info);
    header(info);
    await reload();
  } catch (err) {
    const s = document.getElementById("status");
    s.textContent = String(err.message || err);
    s.className = "err";
  }
}

main();
