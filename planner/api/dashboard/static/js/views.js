// The views. Each draws into `root` from what plan.js read, and returns {refresh, leave}: refresh draws it again
// after a live update, leave lets go of what it holds.

import { api, ApiFailure } from "./api.js";
import { plan, loadLog, loadShapes, loadShapePages, lazy, heldPerBucket, isAdmin, ms, nowLine } from "./plan.js";
import { h, instant, amount, resources, colour, duration } from "./format.js";
import { Timeline } from "./timeline.js";
import { realityView } from "./reality.js";

let resource = null;  // the resource the timeline and the what-if draw, kept across views

function chooseResource(onChange) {
  resource = resource && plan.use.resources.includes(resource) ? resource : plan.use.resources[0];
  const select = h("select", { "aria-label": "resource", onchange: (e) => { resource = e.target.value; onChange(); } },
    plan.use.resources.map((r) => h("option", { value: r, selected: r === resource }, r)));
  return h("label", {}, "resource ", select);
}

function badge(state) { return h("span", { class: `badge ${state}` }, state); }

function failure(root, error) {
  const text = error instanceof ApiFailure && error.status === 403
    ? "This reservation belongs to another user: you see it only as anonymous load in the plan."
    : error.message;
  root.append(h("p", { class: "error", "data-testid": "error" }, text, error.hint ? h("br") : null,
    error.hint ? h("small", {}, error.hint) : null));
}

// -- Timeline --------------------------------------------------------------------------------------------------

function timelineView(root, _, ctx) {
  const holder = h("div", { class: "timeline" });
  let timeline = null;
  const rowsOf = () => plan.reservations.filter((r) => r.state === "accepted");
  const controls = h("div", { class: "controls" },
    chooseResource(() => { timeline.resource = resource; timeline.draw(); }),
    h("button", { type: "button", onclick: () => timeline.show(null) }, "Horizon"),
    h("button", { type: "button", onclick: () => timeline.show(86400e3) }, "Day"),
    h("button", { type: "button", onclick: () => timeline.show(3600e3) }, "Hour"),
    h("button", { type: "button", title: "zoom in (or the mouse wheel)", onclick: () => timeline.zoom(0.5) }, "+"),
    h("button", { type: "button", title: "zoom out", onclick: () => timeline.zoom(2) }, "−"),
    h("span", { class: "hint" }, "wheel: zoom · drag or shift+wheel: pan · click a row: its detail"));
  const table = h("div", { class: "listing" });
  root.append(h("h2", {}, isAdmin() ? "Every reservation" : "My reservations"), controls, holder, table);
  timeline = new Timeline(holder, { onOpen: ctx.open, resource, onVisible: shapesInView(() => timeline) });
  const refresh = () => {
    timeline.update(rowsOf());
    table.replaceChildren(listing(plan.reservations));
  };
  refresh();
  return { refresh, shapes: true, leave: () => timeline.observer.disconnect() };
}

/** On a large plan, read the allocations of the rows scrolled into view, and draw them once read. */
function shapesInView(timeline) {
  return (first, last) => {
    if (!lazy()) return;
    loadShapePages(first, last).then((read) => { if (read) timeline().draw(); }).catch(() => {});
  };
}

function listing(items) {
  const rows = items.slice(-500).reverse().map((r) => h("tr", { "data-reservation": r.reservation },
    h("td", {}, h("a", { href: `#/reservation/${encodeURIComponent(r.reservation)}` }, r.reservation)),
    h("td", {}, badge(r.state)), h("td", {}, r.user), h("td", {}, r.queue || "–"),
    h("td", {}, r.holds ? instant(ms(r.holds.start)) : "–"), h("td", {}, r.holds ? instant(ms(r.holds.end)) : "–"),
    h("td", {}, r.reason ? r.reason.code : "")));
  return h("table", { class: "data" },
    h("caption", {}, items.length > 500 ? `the latest 500 of ${items.length}` : `${items.length} in all`),
    h("thead", {}, h("tr", {}, ["name", "state", "user", "queue", "holds from", "to", "reason"].map((c) => h("th", {}, c)))),
    h("tbody", {}, rows));
}

// -- Capacity over time -----------------------------------------------------------------------------------------

function capacityView(root) {
  const charts = h("div", { class: "charts" });
  const note = h("p", { class: "hint" }, isAdmin()
    ? "Capacity, what the plan has committed (stacked by user), and what is free, per resource."
    : "Capacity, what the plan has committed (yours, and the others' as anonymous load), and what is free.");
  root.append(h("h2", {}, "Capacity over time"), note, charts);
  let plots = [];
  const draw = async () => {
    if (plan.complete !== plan.version) {  // stacked by reservation owner: every allocation is needed
      charts.replaceChildren(h("p", { class: "hint" }, "reading every reservation's allocations…"));
      await loadShapes();
    }
    const limits = isAdmin() ? null : await api("/v1/plan/limits").catch(() => null);
    for (const p of plots) p.destroy();
    charts.replaceChildren();
    plots = plan.use.resources.map((r) => chart(charts, r, limits));
  };
  draw();
  const onResize = () => draw();
  window.addEventListener("resize", onResize);
  return { refresh: draw, shapes: true, leave: () => { window.removeEventListener("resize", onResize); for (const p of plots) p.destroy(); } };
}

/** Stacks: [{label, values}] summing up to what is committed: by user for an admin, mine/others for a user. */
function stacks(r) {
  const used = plan.use.used[r];
  if (!isAdmin()) {
    const mine = heldPerBucket(r);
    return [{ label: "mine", values: mine, colour: "#3b7dd8" },
      { label: "others (anonymous)", values: used.map((u, i) => Math.max(0, u - mine[i])), colour: "#aab6c5" }];
  }
  const users = new Map();
  for (const item of plan.reservations) {
    if (plan.shapes.has(item.reservation)) {
      if (!users.has(item.user)) users.set(item.user, new Set());
      users.get(item.user).add(item.reservation);
    }
  }
  const byUser = [...users].map(([user, names]) => ({ label: user, values: heldPerBucket(r, names), colour: colour(user) }));
  byUser.sort((a, b) => b.values.reduce((x, y) => x + y, 0) - a.values.reduce((x, y) => x + y, 0));
  const top = byUser.slice(0, 8);
  if (byUser.length > 8) {
    const rest = new Float64Array(used.length);
    for (const s of byUser.slice(8)) s.values.forEach((v, i) => { rest[i] += v; });
    top.push({ label: `${byUser.length - 8} more users`, values: rest, colour: "#999" });
  }
  return top;
}

/** Where a user is near their sharing limit on `r` (at 80% of it or more): a sentence, or null. */
function nearLimit(r, limits, mine) {
  if (!limits || limits.instantaneous === null) return null;
  const capacity = plan.use.capacity[r];
  let worst = -1;
  for (let i = 0; i < mine.length; i++) {
    if (worst < 0 || mine[i] / capacity[i] > mine[worst] / capacity[worst]) worst = i;
  }
  const share = mine[worst] / capacity[worst] / limits.instantaneous;
  if (!(share >= 0.8)) return null;
  return `At ${instant(plan.times[worst])} you hold ${Math.round(share * 100)}% of what the sharing policy lets you ` +
    `hold of ${r} at once (${+(limits.instantaneous * 100).toFixed(1)}% of the capacity).`;
}

function chart(parent, r, limits = null) {
  const box = h("div", { class: "chart", "data-resource": r });
  parent.append(box);
  const xs = plan.times.map((t) => t / 1000);
  const capacity = plan.use.capacity[r];
  const used = plan.use.used[r];
  const free = capacity.map((c, i) => c - used[i]);
  const layers = stacks(r);
  const cap = limits && limits.instantaneous !== null ? capacity.map((c) => c * limits.instantaneous) : null;
  const near = nearLimit(r, limits, layers[0].values);
  if (near) box.append(h("p", { class: "warning", "data-testid": "near-limit" }, near));
  const cumulative = [];
  let sum = new Float64Array(xs.length);
  for (const layer of layers) {
    sum = sum.map((v, i) => v + layer.values[i]);
    cumulative.push({ ...layer, values: Array.from(sum) });
  }
  const fmt = (_, v) => (v === null || v === undefined ? "–" : amount(r, v));
  const series = [{},
    ...cumulative.reverse().map((c) => ({ label: c.label, stroke: c.colour, fill: c.colour, width: 0, value: fmt,
      paths: uPlot.paths.stepped({ align: 1 }) })),
    { label: "capacity", stroke: "#222", width: 2, value: fmt, paths: uPlot.paths.stepped({ align: 1 }) },
    { label: "committed", stroke: "#555", width: 1, dash: [4, 3], value: fmt, paths: uPlot.paths.stepped({ align: 1 }) },
    { label: "free", stroke: "#2a9d3a", width: 1, value: fmt, paths: uPlot.paths.stepped({ align: 1 }) }];
  const data = [xs, ...cumulative.map((c) => c.values), capacity, used, free];
  if (cap) {
    series.push({ label: "my limit", stroke: "#c0392b", width: 1.5, dash: [8, 4], value: fmt,
      paths: uPlot.paths.stepped({ align: 1 }) });
    data.push(cap);
  }
  const width = Math.max(400, parent.clientWidth - 20);
  return new uPlot({
    title: r === "memory" ? "memory" : r, width, height: 260, series, cursor: { drag: { x: true, y: false } },
    scales: { x: { time: true } },
    axes: [{}, { values: (_, ticks) => ticks.map((v) => amount(r, v)), size: 84 }],
    plugins: [nowLine()],
  }, data, box);
}


// -- Reservation detail -----------------------------------------------------------------------------------------

function detailView(root, name, ctx) {
  root.append(h("h2", {}, "Reservation ", h("code", {}, name)));
  const body = h("div", { class: "detail", "data-testid": "detail" }, "reading…");
  root.append(body);
  const draw = async () => {
    let record; let log;
    try {
      [record, log] = await Promise.all([api(`/v1/reservations/${encodeURIComponent(name)}`),
        api(`/v1/log?limit=100&reservation=${encodeURIComponent(name)}`)]);
    } catch (error) {
      body.replaceChildren();
      failure(body, error);
      return;
    }
    if (mini) mini.observer.disconnect();
    body.replaceChildren(...detail(record, log.entries, ctx));
    mini = shapeOf(body.querySelector(".pieces"), record);
  };
  let mini = null;
  draw();
  return { refresh: draw, leave: () => { if (mini) mini.observer.disconnect(); } };
}

/** The reservation's allocations on a timeline of its own: the whole, then a row per piece of its tree. */
function shapeOf(holder, record) {
  const allocations = (record.allocations || []).map((a) => ({ ...a, s: ms(a.start), e: ms(a.end) }));
  if (!holder || allocations.length === 0) return;
  const rows = [{ reservation: record.reservation, user: record.user, allocations }];
  for (const atom of new Set(allocations.map((a) => a.atom))) {
    rows.push({ reservation: `  ${atom}`, user: record.user, allocations: allocations.filter((a) => a.atom === atom) });
  }
  resource = resource && plan.use.resources.includes(resource) ? resource : plan.use.resources[0];
  const timeline = new Timeline(holder, { onOpen: () => {}, resource, caption: () => "the whole, then each piece" });
  timeline.update(rows);
  timeline.focus(Math.min(...allocations.map((a) => a.s)), Math.max(...allocations.map((a) => a.e)));
  return timeline;
}

function detail(record, entries, ctx) {
  const facts = [["state", badge(record.state)], ["user", record.user], ["queue", record.queue || "–"],
    ["value", record.value], ["priority", record.priority], ["agent", record.agent],
    ["submitted", instant(ms(record.submitted))], ["decided", instant(ms(record.decided))]];
  const out = [h("dl", { class: "facts" }, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))];
  if (record.accepted) {
    out.push(h("p", { class: "accepted" }, "Accepted: it holds what the allocations below list."));
  } else if (record.reason) {
    out.push(h("div", { class: "rejected", "data-testid": "reason" },
      h("p", {}, h("strong", {}, `Rejected (${record.reason.code}): `), record.reason.message),
      record.reason.earliest_deadline
        ? h("p", {}, "The earliest deadline at which it would fit: ", h("strong", {}, instant(ms(record.reason.earliest_deadline))))
        : null));
  }
  out.push(h("h3", {}, "RDL"), h("pre", { class: "rdl", "data-testid": "rdl" }, record.rdl || ""),
    h("button", { type: "button", onclick: () => { sessionStorage.setItem("rayon.whatif", record.rdl || ""); location.hash = "#/whatif"; } },
      "Edit as a what-if"));
  out.push(h("h3", {}, "Allocations by piece"), pieces(record.allocations || []),
    h("div", { class: "timeline small pieces" }));
  out.push(h("h3", {}, "Decision history"), entries.length === 0
    ? h("p", { class: "hint" }, "No entry of the log you may see: a user sees what they did, and what admins did to theirs.")
    : h("table", { class: "data" },
    h("thead", {}, h("tr", {}, ["time", "actor", "action", "accepted", "reason"].map((c) => h("th", {}, c)))),
    h("tbody", {}, entries.map((e) => h("tr", {}, h("td", {}, instant(ms(e.time))), h("td", {}, e.actor),
      h("td", {}, e.action), h("td", {}, e.accepted === null ? "" : e.accepted ? "yes" : "no"),
      h("td", {}, e.reason ? e.reason.message || e.reason.code || "" : ""))))));
  return out;
}

function pieces(allocations) {
  if (allocations.length === 0) return h("p", {}, "It holds nothing.");
  const byAtom = new Map();
  for (const a of allocations) {
    if (!byAtom.has(a.atom)) byAtom.set(a.atom, []);
    byAtom.get(a.atom).push(a);
  }
  return h("table", { class: "data" },
    h("thead", {}, h("tr", {}, ["piece", "from", "to", "allocations", "most bundles", "most held"].map((c) => h("th", {}, c)))),
    h("tbody", {}, [...byAtom].map(([atom, list]) => {
      const peak = list.reduce((best, a) => (a.bundles > best.bundles ? a : best), list[0]);
      return h("tr", {}, h("td", {}, atom), h("td", {}, instant(Math.min(...list.map((a) => ms(a.start))))),
        h("td", {}, instant(Math.max(...list.map((a) => ms(a.end))))), h("td", {}, list.length),
        h("td", {}, peak.bundles), h("td", {}, resources(peak.resources)));
    })));
}

// -- What-if ------------------------------------------------------------------------------------------------------

const EXAMPLE = `reservation whatif_example deadline=+6h {
  order(
    prepare: atom(b={memory: 4GiB, vcores: 2}, h=16, l=10m, w=4h),
    train: atom(b={memory: 16GiB, vcores: 8}, g=8, h=8, l=1h, w=8h)
  )
}
`;

function whatifView(root) {
  const text = h("textarea", { id: "whatif-rdl", rows: 8, spellcheck: "false", "aria-label": "RDL" },
    sessionStorage.getItem("rayon.whatif") || EXAMPLE);
  const agent = h("select", { id: "whatif-agent", "aria-label": "agent" },
    h("option", { value: "gree-l" }, "gree-l"), h("option", { value: "gree" }, "gree"));
  const answer = h("div", { class: "answer", id: "whatif-answer", "data-testid": "whatif-answer" });
  const holder = h("div", { class: "timeline small" });
  let timeline = null;
  const run = async (dryRun) => {
    sessionStorage.setItem("rayon.whatif", text.value);
    answer.replaceChildren("deciding…");
    try {
      const decision = await api(`/v1/reservations?dry_run=${dryRun}&agent=${agent.value}`,
        { method: "POST", body: text.value });
      showAnswer(answer, decision, dryRun, (deadline) => { text.value = withDeadline(text.value, deadline); run(true); });
      const allocations = (decision.allocations || []).map((a) => ({ ...a, s: ms(a.start), e: ms(a.end) }));
      timeline.extra = decision.accepted ? { reservation: decision.reservation, allocations } : null;
      timeline.resource = resource;
      timeline.update(plan.reservations.filter((r) => r.state === "accepted"));
      if (allocations.length) {  // where it would go, with a day around it at most
        const first = Math.min(...allocations.map((a) => a.s));
        const last = Math.max(...allocations.map((a) => a.e));
        timeline.focus(Math.min(first, Math.max(plan.now, first - 86400e3)), Math.max(last, first + 3600e3));
      }
    } catch (error) {
      answer.replaceChildren();
      failure(answer, error);
    }
  };
  root.append(h("h2", {}, "What-if"),
    h("p", { class: "hint" }, "Paste or edit a reservation in RDL: a dry run answers what the planner would decide " +
      "now, and where it would go, without changing the plan. A rejection says the earliest deadline that fits."),
    text, h("div", { class: "controls" }, h("label", {}, "agent ", agent), chooseResource(() => { timeline.resource = resource; timeline.draw(); }),
      h("button", { type: "button", id: "whatif-run", onclick: () => run(true) }, "Dry run"),
      h("button", { type: "button", id: "whatif-submit", class: "danger", onclick: () => run(false) }, "Submit for real")),
    answer, holder);
  timeline = new Timeline(holder, { onOpen: () => {}, resource, onVisible: shapesInView(() => timeline) });
  timeline.update(plan.reservations.filter((r) => r.state === "accepted"));
  return { refresh: () => timeline.update(plan.reservations.filter((r) => r.state === "accepted")),
    leave: () => timeline.observer.disconnect() };
}

const DEADLINE = /^(\s*reservation\s+[^{\n]*?\bdeadline=)\S+/m;

/** The RDL with its reservation's `deadline=` set to the instant `iso` (unchanged if it has none). */
function withDeadline(rdl, iso) {
  return rdl.replace(DEADLINE, (_, head) => `${head}${iso}`);
}

function showAnswer(answer, decision, dryRun, retry) {
  const out = [h("p", { class: decision.accepted ? "accepted" : "rejected" },
    h("strong", {}, decision.accepted ? (dryRun ? "It would be accepted" : "Accepted and committed")
      : (dryRun ? "It would be rejected" : "Rejected")), decision.accepted ? "." : ": ",
    decision.reason ? decision.reason.message : "")];
  if (decision.reason && decision.reason.earliest_deadline) {
    const earliest = decision.reason.earliest_deadline;
    out.push(h("p", {}, "The earliest deadline at which it would fit: ",
      h("strong", { "data-testid": "earliest" }, instant(ms(earliest))), " ",
      DEADLINE.test(document.getElementById("whatif-rdl").value)
        ? h("button", { type: "button", id: "whatif-retry", onclick: () => retry(earliest) }, "Try it with that deadline")
        : null));
  }
  if (decision.accepted && decision.allocations) {
    const starts = decision.allocations.map((a) => ms(a.start));
    const ends = decision.allocations.map((a) => ms(a.end));
    out.push(h("p", {}, `${decision.allocations.length} allocations, from ${instant(Math.min(...starts))} to ` +
      `${instant(Math.max(...ends))}; drawn on the timeline below as its own row.`));
  }
  answer.replaceChildren(...out);
}

// -- Live ---------------------------------------------------------------------------------------------------------

function liveView(root) {
  const feed = h("div", { class: "feed", "data-testid": "feed" });
  root.append(h("h2", {}, "Live"), h("p", { class: "hint" },
    `The decision log, newest first: the dashboard asks the server every ${duration(2)} whether the plan changed ` +
    "(GET /v1/ready), and reads it again when it did. " +
    (isAdmin() ? "" : "You see what you did, and what admins did to yours.")), feed);
  const draw = async () => {
    const entries = await loadLog(100);
    feed.replaceChildren(h("table", { class: "data" },
      h("thead", {}, h("tr", {}, ["time", "plan clock", "actor", "action", "reservation", "outcome"].map((c) => h("th", {}, c)))),
      h("tbody", {}, [...entries].reverse().map((e) => h("tr", { "data-entry": e.id },
        h("td", {}, instant(ms(e.time))), h("td", {}, e.clock ? instant(ms(e.clock)) : ""), h("td", {}, e.actor),
        h("td", {}, e.action),
        h("td", {}, e.reservation ? h("a", { href: `#/reservation/${encodeURIComponent(e.reservation)}` }, e.reservation) : ""),
        h("td", {}, e.accepted === null ? "" : e.accepted ? "accepted" : `rejected${e.reason ? ` (${e.reason.code})` : ""}`))))));
  };
  draw();
  return { refresh: draw };
}

export const VIEWS = {
  timeline: timelineView, capacity: capacityView, reservation: detailView, whatif: whatifView, live: liveView,
  queues: realityView,
};
