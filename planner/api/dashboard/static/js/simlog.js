// A simulation's event log (`rayon simulate --trace-out FILE`: one JSON line per event, time in seconds from the
// scenario's start) read in the browser into what each queue actually held, per plan step: the mean over the step
// of the containers it ran, for every queue and each of its parents. Nothing of it is sent to the server.

const ENDS_ONE = new Set(["release", "preempt", "lost"]);   // a container ends (named by `container`)
const ENDS_ALL = new Set(["finish", "kill"]);               // every container of the application ends
const MOVE_TO = /^to (\S+?):/;                               // the follower's `move` names the queue it moves to

/** Runs of equal means per queue: Map(queue -> [{s, e, allocated}]) with s, e in ms, `origin` the ms of time 0. */
export function simulated(text, origin, stepSeconds) {
  const containers = new Map();   // id -> {app, queue, resources}
  const held = new Map();          // queue -> {resource: amount held now}
  const sums = new Map();          // queue -> Map(bucket -> {resource: amount × seconds})
  let last = 0;
  const integrate = (until) => {
    for (const [queue, vector] of held) {
      if (!sums.has(queue)) sums.set(queue, new Map());
      const buckets = sums.get(queue);
      for (let b = Math.floor(last / stepSeconds); b * stepSeconds < until; b++) {
        const overlap = Math.min(until, (b + 1) * stepSeconds) - Math.max(last, b * stepSeconds);
        if (overlap <= 0) continue;
        const sum = buckets.get(b) || {};
        for (const [name, value] of Object.entries(vector)) sum[name] = (sum[name] || 0) + value * overlap;
        buckets.set(b, sum);
      }
    }
    last = Math.max(last, until);
  };
  const add = (queue, vector, sign) => {
    const now = held.get(queue) || {};
    for (const [name, value] of Object.entries(vector || {})) now[name] = (now[name] || 0) + sign * value;
    held.set(queue, now);
  };
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    if (!lines[n].trim()) continue;
    let event;
    try { event = JSON.parse(lines[n]); } catch {
      throw new Error(`line ${n + 1} is not JSON: is this the file rayon simulate --trace-out wrote?`);
    }
    if (typeof event.time !== "number" || typeof event.event !== "string") {
      throw new Error(`line ${n + 1} has no time or event: is this the file rayon simulate --trace-out wrote?`);
    }
    if (event.time < last) throw new Error(`line ${n + 1} goes back in time (${event.time} s after ${last} s)`);
    integrate(event.time);
    const kind = event.event;
    if (kind === "allocate" && event.queue) {
      containers.set(event.container, { app: event.application, queue: event.queue, resources: event.resources });
      add(event.queue, event.resources, +1);
    } else if (ENDS_ONE.has(kind) && containers.has(event.container)) {
      const c = containers.get(event.container);
      containers.delete(event.container);
      add(c.queue, c.resources, -1);
    } else if (ENDS_ALL.has(kind) || kind === "move") {
      const target = kind === "move" ? (MOVE_TO.exec(event.detail || "") || [])[1] : null;
      for (const [id, c] of containers) {
        if (c.app !== event.application) continue;
        add(c.queue, c.resources, -1);
        if (target) { c.queue = target; add(target, c.resources, +1); } else containers.delete(id);
      }
    }
  }
  return runsOf(withParents(sums), origin, stepSeconds, Math.ceil(last / stepSeconds));
}

/** Each queue's sums added to every queue above it (root.plan.etl to root.plan and root), as YuniKorn reports. */
function withParents(sums) {
  const out = new Map();
  for (const [queue, buckets] of sums) {
    const parts = queue.split(".");
    for (let depth = parts.length; depth >= 1; depth--) {
      const name = parts.slice(0, depth).join(".");
      if (!out.has(name)) out.set(name, new Map());
      const into = out.get(name);
      for (const [b, sum] of buckets) {
        const total = into.get(b) || {};
        for (const [k, v] of Object.entries(sum)) total[k] = (total[k] || 0) + v;
        into.set(b, total);
      }
    }
  }
  return out;
}

function runsOf(sums, origin, stepSeconds, steps) {
  const out = new Map();
  const names = new Set([...sums.values()].flatMap((buckets) => [...buckets.values()].flatMap(Object.keys)));
  for (const [queue, buckets] of sums) {
    const runs = [];
    for (let b = 0; b < steps; b++) {
      const sum = buckets.get(b) || {};
      const allocated = {};
      for (const name of names) allocated[name] = Math.round(((sum[name] || 0) / stepSeconds) * 1000) / 1000;
      const s = origin + b * stepSeconds * 1000;
      const previous = runs[runs.length - 1];
      if (previous && JSON.stringify(previous.allocated) === JSON.stringify(allocated)) previous.e = s + stepSeconds * 1000;
      else runs.push({ s, e: s + stepSeconds * 1000, allocated });
    }
    out.set(queue, runs);
  }
  return out;
}
