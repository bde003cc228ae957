// mltool studio: the page. Plain JavaScript over the studio's JSON API (docs/STUDIO.md); no framework, no build.
"use strict";
const TOKEN = document.documentElement.dataset.token;
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
const state = { source: null, model: null, run: null, events: null, task: null, models: [],
                lastInput: null };

function url(path, args = {}) {
  const q = new URLSearchParams(Object.assign({ token: TOKEN }, args));
  return path + "?" + q.toString();
}

// Every call: the token in a header; a refusal's message shown as `mltool` prints it.
async function api(method, path, args = {}, body = undefined, type = "application/json") {
  const init = { method, headers: { "X-Studio-Token": TOKEN } };
  if (body !== undefined) {
    init.body = type === "application/json" ? JSON.stringify(body) : body;
    init.headers["Content-Type"] = type;
  }
  const r = await fetch(url(path, args), init);
  const j = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (!r.ok) { showError(j.error || ("HTTP " + r.status)); throw new Error(j.error); }
  clearError();
  return j;
}

function showError(message) { const e = $("error"); e.textContent = "mltool: error: " + message; e.hidden = false; }
function clearError() { $("error").hidden = true; }
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}
function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}
function show(pane) { for (const p of ["data-pane", "run-pane", "model-pane"]) $(p).hidden = p !== pane; }
function select(list, li) { for (const x of $(list).children) x.classList.toggle("selected", x === li); }

// ---- The project ----
async function loadProject() {
  const p = await api("GET", "/api/project");
  state.models = p.models;
  $("root").textContent = p.root;
  $("sources").replaceChildren(...p.sources.map((s) => {
    const li = el("li", { "data-path": s.path }, s.path + (s.isFolder ? "/" : ""), el("small", {}, s.title));
    li.onclick = () => { select("sources", li); openSource(s.path); };
    return li;
  }));
  $("models").replaceChildren(...p.models.map((m) => {
    const li = el("li", { "data-path": m.path }, m.path, el("small", {}, m.summary || m.kind));
    li.onclick = () => { select("models", li); m.kind === "mltool" ? openModel(m) : download(m.path); };
    return li;
  }));
  $("reports").replaceChildren(...p.reports.map((r) => {
    const li = el("li", {}, r);
    li.onclick = () => showReport(r);
    return li;
  }));
  return p;
}

// ---- Data view and the parameters form ----
async function openSource(path) {
  const v = await api("GET", "/api/data", { path });
  state.source = path;
  show("data-pane");
  $("data-title").textContent = v.source.path + " — " + v.source.title;
  $("data-why").textContent = "Recognised as " + v.source.task + " data: " + v.source.why;
  const d = v.summary;
  $("data-chart").replaceChildren(d.columns.length ? columnTable(d.columns, d.rows) : barChart(d.classes));
  const samples = el("div", { class: "samples" });
  if (!d.photos.length) for (const c of d.classes) {
    const fig = el("figure", {});
    const images = d.samplesAreFiles && v.source.task !== "sound";
    for (const s of images ? c.samples : []) fig.append(el("img", { src: url("/api/file", { path: s }), alt: c.label }));
    fig.append(el("figcaption", {}, c.label + " (" + c.count + ")"));
    if (!images) fig.append(el("ul", { class: "texts" }, ...c.samples.map((t) => el("li", {}, t))));
    samples.append(fig);
  }
  for (const p of d.photos) samples.append(annotatedPhoto(p));
  const sentences = d.sentences.length ? el("div", { class: "sentences" },
    ...d.sentences.map((s) => el("p", {}, ...s.words.map((w, i) => el("span", { class: "tagged" }, w, el("sub", {}, s.tags[i])))))) : "";
  $("data-samples").replaceChildren(samples, sentences);
  const bad = d.badFiles.length ? el("div", {}, el("h3", {}, d.badFiles.length + " files or annotations training would skip"),
    el("ul", {}, ...d.badFiles.map((b) => el("li", {}, b)))) : "";
  $("data-bad").replaceChildren(bad, d.note ? el("p", {}, d.note) : "");
  await buildForm(v.source.task);
  if (d.columns.length) targetPicker(d.columns);
}

// A table's columns: kind, missing and distinct values, range or most frequent values, what each is as the target.
function columnTable(columns, rows) {
  const n = (x) => Number(x.toPrecision(4)).toString();
  const head = el("tr", {}, ...["column", "kind", "missing", "distinct", "values", "as the target"].map((h) => el("th", {}, h)));
  const body = columns.map((c) => el("tr", { "data-column": c.name }, el("td", {}, c.name), el("td", {}, c.kind),
    el("td", {}, String(c.missing)), el("td", {}, String(c.distinct)),
    el("td", {}, c.kind === "numeric" ? `${n(c.min)} … ${n(c.max)}, mean ${n(c.mean)}` : c.top.join(", ")),
    el("td", {}, c.asTarget)));
  return el("table", { id: "column-table" }, el("caption", {}, rows + " rows"), head, ...body);
}

// --target as a choice of the columns that can be one (the last of them chosen, as tables usually end with it).
function targetPicker(columns) {
  const input = $("train-fields").querySelector('input[name="--target"]');
  if (!input) return;
  const usable = columns.filter((c) => !c.asTarget.startsWith("not a target"));
  const select = el("select", { name: "--target", id: "target" },
    ...usable.map((c) => el("option", { value: c.name }, `${c.name} (${c.asTarget})`)));
  if (usable.length) select.value = usable[usable.length - 1].name;
  input.replaceWith(select);
}

// A photo with its labelled boxes drawn over it (boxes in pixels, origin top-left).
function annotatedPhoto(p) {
  const scale = Math.min(1, 220 / p.width), w = p.width * scale, h = p.height * scale;
  const s = svg("svg", { width: w, height: h, class: "annotated", "data-path": p.path });
  s.append(svg("image", { href: url("/api/file", { path: p.path }), width: w, height: h }));
  for (const o of p.objects) {
    s.append(svg("rect", { class: "box", x: o.box.x * scale, y: o.box.y * scale, width: o.box.width * scale, height: o.box.height * scale }));
    const t = svg("text", { class: "box-label", x: o.box.x * scale + 2, y: o.box.y * scale + 11 }); t.textContent = o.label; s.append(t);
  }
  return el("figure", {}, s, el("figcaption", {}, p.path + " (" + p.objects.length + ")"));
}

function barChart(classes) {
  const w = 560, row = 18, h = classes.length * row + 4, max = Math.max(1, ...classes.map((c) => c.count));
  const s = svg("svg", { width: w, height: h, id: "class-chart", role: "img", "aria-label": "class counts" });
  classes.forEach((c, i) => {
    const t = svg("text", { x: 0, y: i * row + 13 }); t.textContent = c.label; s.append(t);
    s.append(svg("rect", { class: "bar", x: 150, y: i * row + 3, height: row - 6, width: Math.max(1, (w - 210) * c.count / max) }));
    const n = svg("text", { x: 155 + (w - 210) * c.count / max, y: i * row + 13 }); n.textContent = c.count; s.append(n);
  });
  return s;
}

async function buildForm(task) {
  const f = await api("GET", "/api/options", { task });
  state.task = task;
  $("train-help").textContent = f.help;
  $("train-fields").replaceChildren(...f.fields.map((d) => {
    const input = d.kind === "switch" ? el("input", { type: "checkbox", name: d.flag })
      : el("input", { type: d.kind === "text" ? "text" : "number", name: d.flag, placeholder: d.value, step: "any" });
    return el("div", { class: "field" }, el("code", {}, d.flag), input, el("small", {}, d.help));
  }));
}

$("train-form").onsubmit = async (e) => {
  e.preventDefault();
  const options = {};
  for (const i of $("train-fields").querySelectorAll("input, select")) {
    if (i.type === "checkbox") { if (i.checked) options[i.name] = ""; }
    else if (i.value !== "") options[i.name] = i.value;
  }
  const r = await api("POST", "/api/train", {}, { data: state.source, task: state.task, options });
  follow(r.run, r.output);
};

// ---- A run: its events over server-sent events; the page may close and reopen ----
function follow(id, output) {
  if (state.events) state.events.close();
  state.run = { id, output, iterations: [], epochs: [], log: [] };
  show("run-pane");
  $("run-title").textContent = "Run " + id + " → " + output;
  $("run-state").textContent = "running";
  $("cancel").hidden = false;
  $("run-log").textContent = "";
  $("run-curves").replaceChildren();
  delete $("run-curves").dataset.points;
  $("run-progress").replaceChildren();
  const es = new EventSource(url("/api/runs/" + id + "/events"));
  state.events = es;
  es.onmessage = (m) => onEvent(JSON.parse(m.data));
  es.addEventListener("end", () => es.close());
}

$("cancel").onclick = () => state.run && api("POST", "/api/runs/" + state.run.id + "/cancel", {}, {});

const progressBars = {};
function onEvent(e) {
  const run = state.run;
  if (["failed", "cancelled", "finished"].includes(e.type)) $("cancel").hidden = true;
  const log = (line) => { $("run-log").textContent += line + "\n"; };
  switch (e.type) {
    case "progress": {
      let p = progressBars[e.label];
      if (!p || !p.isConnected) {
        p = el("div", {}, el("span", {}, e.label + " "), el("progress", { max: e.total, value: 0 }), el("span", { class: "eta" }));
        progressBars[e.label] = p; p.start = e.t; $("run-progress").append(p);
      }
      p.children[1].value = e.done;
      const rate = e.done / Math.max(1e-3, e.t - p.start), eta = rate > 0 ? (e.total - e.done) / rate : 0;
      p.children[2].textContent = ` ${e.done}/${e.total}, ETA ${Math.round(eta)} s`;
      break;
    }
    case "iteration": run.iterations.push(e); drawCurves(); break;
    case "epoch": run.epochs.push(e); drawCurves(); break;
    case "features": log(`features: ${e.extracted} extracted, ${e.cached} from cache, ${e.seconds.toFixed(1)} s`); break;
    case "line": log(e.text); break;
    case "warning": log("mltool: warning: " + e.text); break;
    case "note": log("mltool: note: " + e.text); break;
    case "status": log(e.text); break;
    case "skipped": log(e.files.length + " images skipped:\n  " + e.files.join("\n  ")); break;
    case "failed": $("run-state").textContent = "failed"; showError(e.error); break;
    case "cancelled": $("run-state").textContent = "cancelled"; break;
    case "finished":
      $("run-state").textContent = "finished";
      loadProject().then((p) => {
        const m = p.models.find((x) => x.path === e.model);
        if (m) openModel(m, true);
      });
      break;
  }
}

// Loss and accuracies per iteration (or epoch); redrawn on every event.
function drawCurves() {
  const points = state.run.iterations.length ? state.run.iterations : state.run.epochs;
  const w = 560, h = 220, pad = 30;
  const s = svg("svg", { width: w, height: h, id: "curves" });
  const n = Math.max(2, points.length);
  const x = (i) => pad + (w - 2 * pad) * i / (n - 1);
  const maxLoss = Math.max(1e-9, ...points.map((p) => p.loss || 0));
  // A detector's validation score is its mAP@0.5 per epoch, drawn where a classifier's validation accuracy goes.
  const validation = (p) => p.validationAccuracy ?? p.validationMAP50;
  const series = [["loss", (p) => p.loss / maxLoss], ["train-acc", (p) => p.trainAccuracy], ["valid-acc", validation]];
  s.append(svg("line", { x1: pad, y1: h - pad, x2: w - pad, y2: h - pad, stroke: "#999" }));
  for (const [cls, f] of series) {
    const pts = points.map((p, i) => [x(i), f(p)]).filter(([, v]) => typeof v === "number" && isFinite(v));
    if (!pts.length) continue;
    s.append(svg("polyline", { class: cls, points: pts.map(([px, v]) => px + "," + (h - pad - (h - 2 * pad) * v)).join(" ") }));
  }
  s.append(...curveLegend(points, validation, pad));
  $("run-curves").replaceChildren(s);
  $("run-curves").dataset.points = points.length;
}
// The legend: the last point's values, the validation score's name, and what a point is when it is not an epoch.
function curveLegend(points, validation, pad) {
  const last = points[points.length - 1] || {};
  const legend = svg("text", { x: pad, y: 14 });
  const validationName = points.some((p) => p.validationMAP50 !== undefined) ? "validation mAP@0.5" : "validation";
  legend.textContent = `${points.length} points — loss (red, scaled) ${fmt(last.loss)}, train accuracy (blue) ${fmt(last.trainAccuracy)}, ${validationName} (green) ${fmt(validation(last))}`;
  // A text classifier's search tries L2 strengths: one point each, named so (else a flat line reads as a stall).
  const l2s = [...new Set(points.map((p) => p.l2).filter((v) => typeof v === "number"))];
  if (l2s.length < 2 || l2s.length !== points.length) return [legend];
  const per = svg("text", { x: pad, y: 28 });
  per.textContent = "one point per L2 strength tried: " + l2s.map((v) => v.toExponential(0)).join(", ");
  return [legend, per];
}

const fmt = (v) => (typeof v === "number" ? v.toFixed(4) : "-");

// ---- A model: evaluate, preview, quantize, export ----
function openModel(m, fromRun = false) {
  state.model = m;
  if (!fromRun) show("model-pane"); else $("model-pane").hidden = false;
  $("model-title").textContent = m.path;
  $("model-summary").textContent = m.summary || "";
  // The preview asks for what the model takes: a photo, a sentence, or a row of its columns.
  const takes = m.preview ? m.preview.takes : null;
  $("photo").hidden = takes !== "images";
  $("text-input").hidden = takes !== "texts";
  $("row-input").hidden = takes !== "rows";
  $("no-preview").hidden = takes !== null;
  // A model quantize has nothing to compress in (a tabular model) is not offered it.
  $("quantize").hidden = $("bits").parentElement.hidden = Boolean(m.quantizeRefusal);
  if (takes === "rows") rowForm(m.preview.columns || []);
  $("predictions").replaceChildren();
  $("preview-canvas").hidden = true;
  // The previous model's quantization report, export line and evaluation are not this one's.
  $("quantize-report").hidden = true;
  $("downloads").replaceChildren();
  $("report-frame").hidden = true;
  state.lastInput = null;
  fillCompare();
}

// The models a preview can be compared with: the project's other mltool models of the same task.
function fillCompare() {
  const m = state.model, keep = $("compare").value;
  const others = state.models.filter((o) => o.kind === "mltool" && o.task === m.task && o.path !== m.path);
  $("compare").replaceChildren(el("option", { value: "" }, "no other model"),
    ...others.map((o) => el("option", { value: o.path }, o.path)));
  $("compare").value = others.some((o) => o.path === keep) ? keep : "";
  $("compare-column").hidden = true;
}

$("evaluate").onclick = async () => {
  const r = await api("POST", "/api/evaluate", {}, { model: state.model.path });
  showReport(r.report);
};

function showReport(path) {
  $("model-pane").hidden = false;
  const f = $("report-frame");
  f.src = url("/api/file", { path });
  f.hidden = false;
}

$("photo").onchange = () => {
  const file = $("photo").files[0];
  if (!file) return;
  const img = new Image();
  img.onload = () => preview({ body: file, type: file.type || "application/octet-stream", img });
  img.src = URL.createObjectURL(file);
};

// A table row: one field per column the model reads (a categorical one offers its categories); empty is missing.
function rowForm(columns) {
  $("row-fields").replaceChildren(...columns.map((c) => {
    const input = el("input", { type: "text", name: c.name, list: c.categories ? "categories-" + c.name : "" });
    const list = c.categories ? el("datalist", { id: "categories-" + c.name }, ...c.categories.map((v) => el("option", { value: v }))) : "";
    return el("label", { class: "field" }, el("code", {}, c.name), input, list);
  }));
}

$("try-row").onclick = () => {
  const row = {};
  for (const i of $("row-fields").querySelectorAll("input")) if (i.value !== "") row[i.name] = i.value;
  preview({ body: { row }, type: "application/json", img: null });
};

$("try-text").onclick = () => preview({ body: { text: $("sentence").value }, type: "application/json", img: null });

// A new model to compare with runs the last input again.
$("compare").onchange = () => { if (state.lastInput) preview(state.lastInput); else $("compare-column").hidden = true; };

// The input through the open model and, when one is chosen, the model it is compared with (the same bytes).
async function preview(input) {
  state.lastInput = input;
  const other = $("compare").value;
  const r = await api("POST", "/api/predict", { model: state.model.path }, input.body, input.type);
  const r2 = other ? await api("POST", "/api/predict", { model: other }, input.body, input.type) : null;
  drawPrediction(input.img, r, r2, other);
}

// Classes with confidences, or boxes drawn on the photo (each box also a list item, for the page's DOM); the
// compared model's beside them, its boxes in blue.
function drawPrediction(img, r, r2, otherPath) {
  const c = $("preview-canvas");
  let g = null, scale = 1;
  if (img) {
    scale = Math.min(1, 480 / img.width);
    c.width = img.width * scale; c.height = img.height * scale;
    g = c.getContext("2d");
    g.drawImage(img, 0, 0, c.width, c.height);
    c.hidden = false;
  }
  $("this-name").textContent = r2 ? state.model.path : "";
  $("predictions").replaceChildren(...predictionItems(r, g, scale, "#ff2d55"));
  $("compare-column").hidden = !r2;
  if (r2) {
    $("compare-name").textContent = otherPath;
    $("compare-predictions").replaceChildren(...predictionItems(r2, g, scale, "#0a84ff"));
  }
}

// predict --json's objects: classifiers {"top": [{label, probability}]}, taggers {"tokens": [{token, tag}]},
// detectors {"objects": [{label, confidence, box: {x, y, width, height}}]}.
function predictionItems(r, g, scale, color) {
  const items = [];
  for (const p of r.top || []) items.push(`${p.label}  ${(p.probability * 100).toFixed(1)}%`);
  // A table row: the classes by probability, or a regression's value.
  const probabilities = Object.entries(r.probabilities || {}).sort((a, b) => b[1] - a[1]);
  for (const [label, p] of probabilities) items.push(`${label}  ${(p * 100).toFixed(1)}%`);
  if (r.prediction !== undefined && !probabilities.length) items.push(`prediction  ${r.prediction}`);
  if (r.tokens) items.push(r.tokens.map((t) => t.token + "/" + t.tag).join(" "));
  for (const o of (g && r.objects) || []) {
    const b = o.box || o;
    g.strokeStyle = color; g.lineWidth = 2;
    g.strokeRect(b.x * scale, b.y * scale, b.width * scale, b.height * scale);
    items.push(`${o.label} ${(o.confidence * 100).toFixed(1)}% [${[b.x, b.y, b.width, b.height].map(Math.round).join(", ")}]`);
  }
  return items.map((t) => el("li", { class: "prediction" }, t));
}

$("quantize").onclick = async () => {
  const r = await api("POST", "/api/quantize", {}, { model: state.model.path, options: { "--bits": $("bits").value } });
  $("quantize-report").textContent = r.text;
  $("quantize-report").hidden = false;
  await loadProject();
  fillCompare();
};

for (const b of [$("export-onnx"), $("export-coreml"), $("export-tflite")]) {
  b.onclick = async () => {
    const r = await api("POST", "/api/export", {}, { model: state.model.path, to: b.dataset.to });
    const a = el("a", { href: url("/api/file", { path: r.file, download: "1" }), download: "", id: "download-" + b.dataset.to }, "Download " + r.file);
    $("downloads").replaceChildren(r.line + " ", a);
    await loadProject();
  };
}

function download(path) { location.href = url("/api/file", { path, download: "1" }); }

// On load: the project, and the run still going (a reopened page picks it up from its first event).
loadProject().then(async () => {
  const r = await api("GET", "/api/runs");
  const running = r.runs.filter((x) => x.state === "running").pop();
  if (running) follow(running.id, running.output);
}).catch(() => {});
