// The plan against reality, per queue over time: what the plan asked of each queue (planned), what the plan follower
// wrote for it (guaranteed, and its max), and what a scheduler actually allocated to it: YuniKorn, polled by the
// server (`rayon serve --follow-allocated`), or a simulation's event log loaded here from a file. The server's
// history: GET /v1/queues/history (a user sees their own queues, the others' summed as one anonymous entry).

import { api } from "./api.js";
import { plan, isAdmin, ms, nowLine } from "./plan.js";
import { h, instant, amount, resources } from "./format.js";
import { simulated } from "./simlog.js";

const SPANS = [["Hour", 3600e3], ["6 hours", 6 * 3600e3], ["Day", 86400e3], ["Week", 7 * 86400e3]];
const MAX_CHARTS = 24;
const SOURCES = { yunikorn: "actual: YuniKorn", simulate: "actual: simulation" };
const COLOURS = { planned: "#777", guaranteed: "#3b7dd8", max: "#9fb3d1", yunikorn: "#d9822b", simulate: "#2a9d3a" };

let span = 86400e3;
let resource = null;
let only = "";           // one queue chosen ("" : every queue, up to MAX_CHARTS)
let simulation = null;   // {file, origin, runs: Map(queue -> runs)}: read here, never sent
let problem = null;      // why the file chosen could not be read

export function realityView(root) {
  const charts = h("div", { class: "charts", "data-testid": "reality" });
  const sources = h("p", { class: "hint", "data-testid": "sources" });
  const now = h("div", { "data-testid": "queues" }, "reading…");
  const choice = h("select", { "aria-label": "queue", id: "reality-queue",
    onchange: (e) => { only = e.target.value; draw(); } });
  // a simulation's time 0: by default the earliest step recorded in the range shown, until the user types one
  const origin = h("input", { id: "sim-origin", size: 22, "aria-label": "time 0 of the simulation",
    oninput: () => { origin.dataset.typed = "1"; } });
  const file = h("input", { id: "sim-file", type: "file", accept: ".jsonl,.json,.txt", "aria-label": "event log",
    onchange: () => loadSimulation(file, origin).then(draw) });
  resource = resource && plan.use.resources.includes(resource) ? resource : plan.use.resources[0];
  root.append(h("h2", {}, "Plan against reality"), h("p", { class: "hint" },
    "Per queue: what the plan asks for (planned), what the plan follower wrote for it at each step (guaranteed, " +
    "and its max), and what a scheduler actually allocated: YuniKorn, when the server polls it " +
    "(rayon serve --follow-allocated URL), or a simulation's event log (rayon simulate --trace-out) loaded below. " +
    (isAdmin() ? "" : "You see your own queues; the others' reservation queues only summed, as anonymous load.")),
  h("div", { class: "controls" },
    h("label", {}, "resource ", h("select", { "aria-label": "resource", onchange: (e) => { resource = e.target.value; draw(); } },
      plan.use.resources.map((r) => h("option", { value: r, selected: r === resource }, r)))),
    SPANS.map(([label, length]) => h("button", { type: "button", class: length === span ? "span active" : "span",
      onclick: (e) => { span = length; for (const b of root.querySelectorAll("button.span")) b.classList.toggle("active", b === e.target); draw(); } },
    label)),
    h("label", {}, "queue ", choice)),
  h("div", { class: "controls" },
    h("label", {}, "simulation's event log ", file), h("label", {}, "its time 0 at ", origin),
    h("button", { type: "button", onclick: () => { simulation = null; problem = null; file.value = ""; draw(); } },
      "Forget it"),
    isAdmin() ? h("button", { type: "button", id: "sim-keep", title: "POST /v1/queues/allocated: every user then sees it, " +
      "their own queues by name and the others' summed", onclick: () => keep().then(() => { file.value = ""; draw(); }) },
    "Keep it on the server") : null),
  sources, charts, h("h3", {}, "Queues now"), now);
  let plots = [];
  const draw = async () => {
    const to = plan.now + plan.use.step * 1000;
    const from = to - span;
    let history;
    try {
      history = await api(`/v1/queues/history?from=${iso(from)}&to=${iso(to)}`);
    } catch (error) {
      charts.replaceChildren(h("p", { class: "error" }, error.message));
      return;
    }
    const entries = withSimulation(history.queues.map(parsed), from, to);
    const earliest = entries.reduce((t, e) => (e.follower.length ? Math.min(t, e.follower[0].s) : t), to);
    if (!origin.dataset.typed) origin.value = iso(Math.max(from, earliest));
    chooser(choice, entries);
    for (const p of plots) p.destroy();
    plots = [];
    charts.replaceChildren();
    sources.replaceChildren(sourceNote(entries, history),
      problem ? h("span", { class: "error", "data-testid": "sim-error" }, ` ${problem}`) : "");
    const shown = entries.filter((e) => !only || key(e) === only);
    if (shown.length === 0) {
      charts.append(h("p", { class: "hint" }, "Nothing recorded in this range: the server records the follower's " +
        "round at every step while it runs (rayon serve --queue-log, on by default)."));
    }
    for (const entry of shown.slice(0, MAX_CHARTS)) plots.push(chart(charts, entry, from, to));
    if (shown.length > MAX_CHARTS) {
      charts.append(h("p", { class: "hint" }, `${MAX_CHARTS} of ${shown.length} queues drawn: choose one above.`));
    }
    charts.dataset.drawn = String(plots.length);
  };
  const refresh = () => Promise.all([draw(), queuesNow(now)]);
  refresh();
  const onResize = () => draw();
  window.addEventListener("resize", onResize);
  return { refresh, leave: () => { window.removeEventListener("resize", onResize); for (const p of plots) p.destroy(); } };
}

const iso = (t) => new Date(t).toISOString().replace(".000Z", "Z");
const key = (entry) => entry.queue || "others";

function parsed(entry) {
  const timed = (runs) => runs.map((r) => ({ ...r, s: ms(r.start), e: ms(r.end) }));
  const allocated = {};
  for (const [source, runs] of Object.entries(entry.allocated || {})) allocated[source] = timed(runs);
  return { ...entry, follower: timed(entry.follower || []), allocated };
}

/** The loaded simulation's runs beside the server's, by queue name (an admin also gets the queues only it has). */
function withSimulation(entries, from, to) {
  if (!simulation) return entries;
  const byName = new Map(entries.filter((e) => e.queue).map((e) => [e.queue, e]));
  for (const [queue, runs] of simulation.runs) {
    const inRange = runs.filter((r) => r.e > from && r.s < to);
    if (byName.has(queue)) byName.get(queue).allocated.simulate = inRange;
    else if (isAdmin() && inRange.length) {
      const entry = { queue, kind: null, reservation: null, user: null, follower: [], allocated: { simulate: inRange } };
      entries.push(entry);
      byName.set(queue, entry);
    }
  }
  return entries;
}

async function loadSimulation(input, origin) {
  const chosen = input.files && input.files[0];
  if (!chosen) return;
  simulation = null;
  problem = null;
  const zero = Date.parse(origin.value);
  if (Number.isNaN(zero)) {
    problem = `${origin.value} is not a time: give an ISO time such as 2026-11-23T00:00:00Z`;
    return;
  }
  try {
    simulation = { file: chosen.name, origin: zero, runs: simulated(await chosen.text(), zero, plan.use.step) };
  } catch (error) {
    problem = `${chosen.name}: ${error.message}`;
  }
}

const PIECE = 4000;  // runs per request: well under the API's body limit (1 MiB by default)

/** Send the loaded simulation to the server (admins), a piece at a time; then it is the server's, read back. */
async function keep() {
  if (!simulation) { problem = "load a simulation's event log first"; return; }
  const runs = [...simulation.runs].flatMap(([queue, list]) => list.map((r) => ({
    queue, start: iso(r.s), end: iso(r.e), allocated: r.allocated })));
  try {
    for (let i = 0; i < runs.length; i += PIECE) {
      await api("/v1/queues/allocated", { method: "POST", type: "application/json",
        body: JSON.stringify({ source: "simulate", runs: runs.slice(i, i + PIECE) }) });
    }
    simulation = null;
    problem = null;
  } catch (error) {
    problem = `keeping it failed: ${error.message}`;
  }
}

function chooser(select, entries) {
  const names = entries.map(key);
  if (only && !names.includes(only)) only = "";
  select.replaceChildren(h("option", { value: "" }, "every queue"),
    names.map((n) => h("option", { value: n, selected: n === only }, n === "others" ? "others (anonymous)" : n)));
}

function sourceNote(entries, history) {
  const by = (source) => entries.filter((e) => (e.allocated[source] || []).length).length;
  const parts = [`${entries.length} queues from ${instant(ms(history.from))} to ${instant(ms(history.to))}.`,
    by("yunikorn") ? `YuniKorn's allocations recorded for ${by("yunikorn")} of them.`
      : "No scheduler's allocations recorded (rayon serve --follow-allocated URL polls YuniKorn).",
    simulation ? `Simulation ${simulation.file} (time 0 at ${instant(simulation.origin)}): ${by("simulate")} queues.`
      : by("simulate") ? `A simulation's allocations kept on the server for ${by("simulate")} of them.` : ""];
  return parts.filter(Boolean).join(" ");
}

/** Values of `pick(run)` at each x (ms) from runs sorted by time: the run covering x, or null in a gap. The last
 * x (the range's end) repeats the value just before it, so that the last step is drawn to the end. */
function stepValues(xs, runs, pick) {
  const out = new Array(xs.length).fill(null);
  let i = 0;
  for (let k = 0; k < xs.length; k++) {
    const x = k === xs.length - 1 ? xs[k] - 1 : xs[k];
    while (i < runs.length && runs[i].e <= x) i++;
    if (i < runs.length && runs[i].s <= x) out[k] = pick(runs[i]);
  }
  return out;
}

function title(entry) {
  if (entry.kind === "others") return `others (anonymous): ${entry.count} reservation queues of other users in this range`;
  const who = entry.kind === "reservation" ? ` — ${entry.reservation}${entry.user ? ` (${entry.user})` : ""}` : "";
  return `${entry.queue}${who}${entry.kind && entry.kind !== "reservation" ? ` — the ${entry.kind} queue` : ""}`;
}

/** How much of what was written the scheduler held, over the steps where both are known: a sentence, or null. */
function held(xs, written, actual, label) {
  let w = 0; let a = 0;
  for (let k = 0; k + 1 < xs.length; k++) {
    if (written[k] === null || actual[k] === null) continue;
    const dt = xs[k + 1] - xs[k];
    w += written[k] * dt; a += actual[k] * dt;
  }
  return w > 0 ? `${label} held ${Math.round((a / w) * 100)}% of what was written` : null;
}

function chart(parent, entry, from, to) {
  const box = h("div", { class: "chart", "data-queue": key(entry) });
  parent.append(box);
  const edges = new Set([from, to]);
  const runsOf = [entry.follower, ...Object.values(entry.allocated)];
  for (const runs of runsOf) for (const r of runs) { if (r.s > from && r.s < to) edges.add(r.s); if (r.e > from && r.e < to) edges.add(r.e); }
  const xs = [...edges].sort((a, b) => a - b);
  const of = (field) => (run) => (run[field] && run[field][resource] !== undefined ? run[field][resource] : null);
  const step = uPlot.paths.stepped({ align: 1 });
  const fmt = (_, v) => (v === null || v === undefined ? "–" : amount(resource, v));
  const series = [{}];
  const data = [xs.map((x) => x / 1000)];
  const written = stepValues(xs, entry.follower, of("guaranteed"));
  const add = (label, values, stroke, extra = {}) => {
    if (values.every((v) => v === null)) return;
    series.push({ label, stroke, width: 2, value: fmt, paths: step, spanGaps: false, points: { show: false }, ...extra });
    data.push(values);
  };
  add("written (guaranteed)", written, COLOURS.guaranteed);
  add("max", stepValues(xs, entry.follower, of("max")), COLOURS.max, { dash: [2, 3], width: 1 });
  add("planned", stepValues(xs, entry.follower, of("planned")), COLOURS.planned, { dash: [6, 4], width: 1.5 });
  const notes = [];
  for (const [source, label] of Object.entries(SOURCES)) {
    const runs = entry.allocated[source];
    if (!runs || runs.length === 0) continue;
    const actual = stepValues(xs, runs, of("allocated"));
    add(label, actual, COLOURS[source], { fill: `${COLOURS[source]}22` });
    const sentence = held(xs, written, actual, label.replace("actual: ", ""));
    if (sentence) notes.push(sentence);
  }
  box.append(h("div", { class: "chart-title" }, title(entry)),
    notes.length ? h("p", { class: "hint", "data-testid": "held" }, `${notes.join("; ")} (${resource}, over the range).`) : null);
  const width = Math.max(400, parent.clientWidth - 20);
  return new uPlot({
    width, height: 200, series, cursor: { drag: { x: true, y: false } },
    scales: { x: { time: true }, y: { range: (_, __, max) => [0, max > 0 ? max * 1.08 : 1] } },
    axes: [{}, { values: (_, ticks) => ticks.map((v) => amount(resource, v)), size: 84 }],
    plugins: [nowLine()],
  }, data, box);
}


/** The follower's round at the plan's clock (GET /v1/queues), as a table. */
async function queuesNow(body) {
  let round;
  try { round = await api("/v1/queues"); } catch (error) {
    body.replaceChildren(h("p", { class: "error" }, error.message));
    return;
  }
  body.replaceChildren(
    h("dl", { class: "facts" },
      h("dt", {}, "at"), h("dd", {}, instant(ms(round.time))),
      h("dt", {}, "next change"), h("dd", {}, round.next_change ? instant(ms(round.next_change)) : "none within the horizon"),
      h("dt", {}, "cluster capacity"), h("dd", {}, resources(round.capacity)),
      h("dt", {}, "scale"), h("dd", {}, `${round.scale}${round.overcommitted ? " (over-committed)" : ""}`)),
    h("table", { class: "data" },
      h("thead", {}, h("tr", {}, ["queue", "kind", "planned", "guaranteed", "max"].map((c) => h("th", {}, c)))),
      h("tbody", {}, round.queues.map((q) => h("tr", {}, h("td", {}, q.queue || `others (${q.count} queues)`), h("td", {}, q.kind),
        h("td", {}, resources(q.planned)), h("td", {}, resources(q.guaranteed)), h("td", {}, q.max ? resources(q.max) : "–"))))));
}
