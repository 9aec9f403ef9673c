// What the dashboard knows of the plan, read from the API: the clock, the capacity and use over the horizon, and
// the reservations the token may see (a user's own; an admin's every one). Others' load is the plan's use minus
// what the visible reservations hold: anonymous, as the API gives it.

import { api, everything, ApiFailure } from "./api.js";

export const plan = {
  who: null,          // {user, role}
  now: null,          // ms since the epoch: the plan's clock
  version: null,      // the plan's version: it changes with every decision and every clock move
  use: null,          // /v1/plan/use: {start, end, step (s), times, resources, capacity, used}
  times: [],          // use.times as ms
  reservations: [],   // listing items (every state), decision order
  byName: new Map(),
  shapes: new Map(),  // name -> allocations [{atom, start, end, bundles, resources, s, e}] (accepted ones)
  complete: null,     // the plan version at which every accepted reservation's allocations were read
  pages: new Map(),   // page of accepted rows -> the plan version it was read at (lazy reading)
  log: [],
  loadedAt: null,
};

export const ms = (text) => Date.parse(text);

/** The plan's use over the whole horizon, at plan steps, or in hour buckets where that is too many points. */
async function readUse() {
  try {
    return await api("/v1/plan/use");
  } catch (error) {
    if (error instanceof ApiFailure && error.status === 422) return api("/v1/plan/use?step=1h");
    throw error;
  }
}

/** Read the clock, the use and the reservations' records (without their allocations: `holds` only). */
export async function loadPlan() {
  const [who, ready, use, items] = await Promise.all([
    plan.who ? Promise.resolve(plan.who) : api("/v1/whoami"),
    api("/v1/ready"), readUse(), everything("/v1/reservations"),
  ]);
  plan.who = who;
  plan.now = ms(ready.now);
  plan.version = ready.plan_version;
  plan.use = use;
  plan.times = use.times.map(ms);
  plan.reservations = items;
  plan.byName = new Map(items.map((r) => [r.reservation, r]));
  for (const name of [...plan.shapes.keys()]) if (!plan.byName.has(name)) plan.shapes.delete(name);
  plan.loadedAt = Date.now();
  return plan;
}

const ACCEPTED = "/v1/reservations?state=accepted&allocations=true";
const PAGE = 200;
// An admin's plan with more accepted reservations than this has its allocations read a page of rows at a time as
// they come into view (5,000 reservations' allocations are tens of megabytes of JSON); below it, all at once.
export const LAZY = 500;

function shape(record) {
  return (record.allocations || []).map((a) => ({ ...a, s: ms(a.start), e: ms(a.end) }));
}

/** Whether the allocations are read as rows come into view (loadShapePages) rather than all at once. */
export function lazy() {
  return isAdmin() && plan.reservations.filter((r) => r.state === "accepted").length > LAZY;
}

/** Read the allocations of every accepted reservation the token sees (their shapes on the timeline). */
export async function loadShapes() {
  const version = plan.version;
  const items = await everything(ACCEPTED);
  plan.shapes = new Map(items.map((r) => [r.reservation, shape(r)]));
  plan.complete = version;
  return plan.shapes;
}

/** Read the allocations of the accepted reservations `first` to `last` (in decision order, the timeline's rows)
 * unless read at this plan version already; whether any were read. */
export async function loadShapePages(first, last) {
  const version = plan.version;
  const wanted = [];
  for (let page = Math.floor(first / PAGE); page <= Math.floor(last / PAGE); page++) {
    if (plan.pages.get(page) !== version) { plan.pages.set(page, version); wanted.push(page); }
  }
  await Promise.all(wanted.map(async (page) => {
    try {
      const answer = await api(`${ACCEPTED}&offset=${page * PAGE}&limit=${PAGE}`);
      for (const r of answer.items) plan.shapes.set(r.reservation, shape(r));
    } catch (error) {
      plan.pages.delete(page);
      throw error;
    }
  }));
  return wanted.length > 0;
}

export async function loadLog(limit = 100) {
  plan.log = (await api(`/v1/log?limit=${limit}`)).entries;
  return plan.log;
}

/** The sum over the visible reservations (or those in `names`) of what they hold of `resource`, per use bucket. */
export function heldPerBucket(resource, names = null) {
  const out = new Float64Array(plan.times.length);
  if (plan.times.length === 0) return out;
  const t0 = plan.times[0];
  const step = plan.use.step * 1000;
  for (const [name, allocations] of plan.shapes) {
    if (names && !names.has(name)) continue;
    const own = new Float64Array(out.length);  // a reservation's own total, at most its peak within a bucket
    for (const a of allocations) {
      const first = Math.max(0, Math.floor((a.s - t0) / step));
      const last = Math.min(out.length, Math.ceil((a.e - t0) / step));
      for (let i = first; i < last; i++) own[i] += a.resources[resource] || 0;
    }
    for (let i = 0; i < out.length; i++) out[i] += own[i];
  }
  return out;
}

/** Where the capacity of `resource` changes within the horizon: [{t, from, to}]. */
export function capacityChanges(resource) {
  const values = plan.use.capacity[resource] || [];
  const changes = [];
  for (let i = 1; i < values.length; i++) {
    if (values[i] !== values[i - 1]) changes.push({ t: plan.times[i], from: values[i - 1], to: values[i] });
  }
  return changes;
}

export function isAdmin() { return plan.who && plan.who.role === "admin"; }

/** A uPlot plugin drawing the plan's clock as a red line. */
export function nowLine() {
  return { hooks: { draw: [(u) => {
    const x = u.valToPos(plan.now / 1000, "x", true);
    if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
    u.ctx.save();
    u.ctx.fillStyle = "#d22";
    u.ctx.fillRect(x - 1, u.bbox.top, 2, u.bbox.height);
    u.ctx.restore();
  }] } };
}
