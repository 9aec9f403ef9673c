// The timeline: a Gantt row per visible reservation with its allocations drawn as a shape (height: what it holds
// of one resource at each moment, against its own peak), a first row with the plan's load (the visible
// reservations' and the others', anonymous), the "now" line, capacity changes marked, zoom from the horizon down to
// single steps (wheel, buttons, drag to pan), and a click on a row opens the reservation's detail.
// Rows are drawn on one canvas, only those scrolled into view, so thousands of reservations stay cheap.

import { plan, heldPerBucket, capacityChanges, isAdmin } from "./plan.js";
import { h, shortInstant, instant, amount, colour } from "./format.js";

const ROW = 22;
const AXIS = 30;
const LOAD = 64;       // the load row's height
const LABEL = 190;     // the names' column

export class Timeline {
  constructor(container, { onOpen, resource, onVisible = null, caption = null }) {
    this.onOpen = onOpen;
    this.caption = caption || ((n) => `${n} reservation${n === 1 ? "" : "s"}`);
    this.onVisible = onVisible;  // called with the first and last rows in view (indices into the rows given)
    this.resource = resource;
    this.rows = [];
    this.extra = null;  // a what-if answer drawn as a row of its own: {name, allocations}
    this.view = null;   // [t0, t1] in ms
    this.scroller = h("div", { class: "timeline-scroll", "data-testid": "timeline" });
    this.spacer = h("div", { class: "timeline-spacer" });
    this.canvas = h("canvas", { class: "timeline-canvas" });
    this.tip = h("div", { class: "tip", hidden: true });
    this.scroller.append(this.canvas, this.spacer);
    container.append(this.scroller, this.tip);
    this.scroller.addEventListener("scroll", () => this.draw());
    this.canvas.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    this.canvas.addEventListener("mousedown", (e) => this.press(e));
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    this.observer = new ResizeObserver(() => this.draw());
    this.observer.observe(this.scroller);
  }

  /** The horizon, the rows to draw, and a redraw (keeping the zoom unless it has left the horizon). */
  update(rows) {
    this.rows = rows;
    const [start, end] = this.horizon();
    if (!this.view || this.view[1] <= start || this.view[0] >= end) this.view = [start, end];
    this.content = AXIS + LOAD + (rows.length + (this.extra ? 1 : 0)) * ROW + 8;
    this.draw();
  }

  horizon() {
    const start = plan.times[0];
    return [start, start + plan.times.length * plan.use.step * 1000];
  }

  zoom(factor, at = null) {
    const [start, end] = this.horizon();
    const [t0, t1] = this.view;
    const pivot = at ?? (t0 + t1) / 2;
    const least = Math.min(20 * plan.use.step * 1000, end - start);  // down to single steps, 20 in view
    const span = Math.min(end - start, Math.max(least, (t1 - t0) * factor));
    let lo = pivot - (pivot - t0) * (span / (t1 - t0));
    lo = Math.min(Math.max(lo, start), end - span);
    this.view = [lo, lo + span];
    this.draw();
  }

  /** Zoom to [start, end), widened by a tenth on each side (within the horizon). */
  focus(start, end) {
    const [first, last] = this.horizon();
    const pad = Math.max((end - start) / 10, plan.use.step * 1000 * 5);
    this.view = [Math.max(first, start - pad), Math.min(last, end + pad)];
    this.draw();
  }

  show(span) {
    const [start, end] = this.horizon();
    if (span === null) { this.view = [start, end]; this.draw(); return; }
    const lo = Math.min(Math.max(plan.now - span / 8, start), end - span);
    this.view = [lo, Math.min(lo + span, end)];
    this.draw();
  }

  x(t, width) { const [t0, t1] = this.view; return LABEL + ((t - t0) / (t1 - t0)) * (width - LABEL); }
  t(x, width) { const [t0, t1] = this.view; return t0 + ((x - LABEL) / (width - LABEL)) * (t1 - t0); }

  wheel(event) {
    event.preventDefault();
    if (event.shiftKey) return this.pan(event.deltaY);
    const rect = this.canvas.getBoundingClientRect();
    this.zoom(event.deltaY > 0 ? 1.25 : 0.8, this.t(event.clientX - rect.left, rect.width));
  }

  pan(pixels) {
    const [start, end] = this.horizon();
    const [t0, t1] = this.view;
    const width = this.canvas.getBoundingClientRect().width - LABEL;
    const shift = (pixels / width) * (t1 - t0);
    const lo = Math.min(Math.max(t0 + shift, start), end - (t1 - t0));
    this.view = [lo, lo + (t1 - t0)];
    this.draw();
  }

  press(event) {
    let last = event.clientX;
    let moved = false;
    const move = (e) => { if (Math.abs(e.clientX - last) > 2) { moved = true; this.pan(last - e.clientX); last = e.clientX; } };
    const up = (e) => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      if (!moved) this.click(e);
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  rowAt(event) {
    const rect = this.canvas.getBoundingClientRect();
    const y = event.clientY - rect.top + this.scroller.scrollTop - AXIS - LOAD;
    if (y < 0) return null;
    const index = Math.floor(y / ROW);
    if (this.extra && index === 0) return { extra: true, ...this.extra };
    return this.rows[index - (this.extra ? 1 : 0)] || null;
  }

  click(event) {
    const row = this.rowAt(event);
    if (row && !row.extra) this.onOpen(row.reservation);
  }

  hover(event) {
    const row = this.rowAt(event);
    const rect = this.canvas.getBoundingClientRect();
    if (!row) { this.tip.hidden = true; return; }
    const t = this.t(event.clientX - rect.left, rect.width);
    const shape = row.allocations || plan.shapes.get(row.reservation) || [];
    const held = shape.filter((a) => a.s <= t && t < a.e).map((a) => `${a.atom}: ${a.bundles} × ` +
      `${amount(this.resource, a.resources[this.resource] / Math.max(a.bundles, 1))}`);
    this.tip.textContent = `${row.reservation}${row.user ? ` (${row.user})` : ""} · ${instant(t)}` +
      (held.length ? ` · ${held.join("; ")}` : "");
    this.tip.hidden = false;
    this.tip.style.left = `${event.clientX + 12}px`;
    this.tip.style.top = `${event.clientY + 12}px`;
  }

  draw() {
    if (!this.view || !plan.use) return;
    const width = this.scroller.clientWidth;
    const height = Math.max(120, this.scroller.clientHeight);
    this.spacer.style.height = `${Math.max(0, (this.content || 0) - height)}px`;
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = width * ratio;
    this.canvas.height = height * ratio;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    const g = this.canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = "12px system-ui, sans-serif";
    const top = this.scroller.scrollTop;
    this.drawRows(g, width, height, top);
    this.drawLoad(g, width);
    this.drawAxis(g, width, height);
    this.canvas.dataset.rendered = String(this.rows.length);
    // For benchmarks/dashboard.py: when the reservations were first drawn (bars), and first with their shapes.
    if (this.rows.length && !performance.getEntriesByName("rayon:rows").length) performance.mark("rayon:rows");
    if (plan.shapes.size && !performance.getEntriesByName("rayon:shapes").length) performance.mark("rayon:shapes");
  }

  drawRows(g, width, height, top) {
    const all = this.extra ? [{ extra: true, ...this.extra }, ...this.rows] : this.rows;
    const first = Math.max(0, Math.floor(top / ROW));
    const last = Math.min(all.length, first + Math.ceil((height - AXIS - LOAD) / ROW) + 1);
    const shift = this.extra ? 1 : 0;
    if (this.onVisible && this.rows.length) this.onVisible(Math.max(0, first - shift), Math.max(0, last - 1 - shift));
    const steps = (width - LABEL) / ((this.view[1] - this.view[0]) / (plan.use.step * 1000));
    for (let i = first; i < last; i++) {
      const row = all[i];
      const y = AXIS + LOAD + i * ROW - top;
      if (y + ROW < AXIS + LOAD) continue;
      g.fillStyle = i % 2 ? "#fafafa" : "#f2f4f7";
      g.fillRect(0, y, width, ROW);
      g.fillStyle = row.extra ? "#b35c00" : "#222";
      g.fillText(fit(g, row.extra ? `what-if: ${row.reservation}` : row.reservation, LABEL - 8), 6, y + 15);
      this.drawShape(g, row, y, width, steps);
    }
  }

  drawShape(g, row, y, width, stepPixels) {
    const shape = row.allocations || plan.shapes.get(row.reservation);
    const base = row.extra ? "#e08a00" : colour(row.user || row.reservation);
    g.save();
    g.beginPath();
    g.rect(LABEL, y, width - LABEL, ROW);
    g.clip();
    if (!shape) {  // allocations not read yet: what it holds, first to last
      if (row.holds) {
        g.fillStyle = base;
        g.globalAlpha = 0.45;
        const x0 = this.x(Date.parse(row.holds.start), width);
        g.fillRect(x0, y + 8, Math.max(1, this.x(Date.parse(row.holds.end), width) - x0), ROW - 14);
      }
      g.restore();
      return;
    }
    const peak = Math.max(1, ...shape.map((a) => a.resources[this.resource] || 0));
    g.fillStyle = base;
    for (const a of shape) {
      const x0 = this.x(a.s, width);
      const x1 = this.x(a.e, width);
      if (x1 < LABEL || x0 > width) continue;
      const tall = ((a.resources[this.resource] || 0) / peak) * (ROW - 5);
      g.fillRect(x0, y + ROW - 2 - tall, Math.max(1, x1 - x0 - (stepPixels > 8 ? 1 : 0)), tall);
    }
    g.restore();
  }

  drawLoad(g, width) {
    const top = AXIS;
    g.fillStyle = "#fff";
    g.fillRect(0, top, width, LOAD);
    g.fillStyle = "#222";
    g.fillText(`load: ${this.resource}`, 6, top + 16);
    g.fillStyle = "#666";
    g.fillText(isAdmin() ? "all reservations" : "mine, and others' (anonymous)", 6, top + 32);
    const capacity = plan.use.capacity[this.resource] || [];
    const used = plan.use.used[this.resource] || [];
    const mine = isAdmin() ? null : heldPerBucket(this.resource);
    // Scaled to the most promised at once (capacity drawn where it fits): a plan using a tenth of a large cluster
    // would otherwise be a flat line.
    const peak = Math.max(1, ...used) * 1.15;
    const step = plan.use.step * 1000;
    const yOf = (v) => top + LOAD - 4 - (v / peak) * (LOAD - 8);
    g.fillText(`scale: 0 – ${amount(this.resource, peak)}`, 6, top + 48);
    g.save();
    g.beginPath();
    g.rect(LABEL, top, width - LABEL, LOAD);
    g.clip();
    for (let i = 0; i < plan.times.length; i++) {
      const x0 = this.x(plan.times[i], width);
      const x1 = this.x(plan.times[i] + step, width);
      if (x1 < LABEL || x0 > width) continue;
      const w = Math.max(1, x1 - x0);
      g.fillStyle = "#cfd8e3";
      g.fillRect(x0, yOf(used[i]), w, top + LOAD - 4 - yOf(used[i]));
      if (mine) {
        g.fillStyle = "#3b7dd8";
        g.fillRect(x0, yOf(mine[i]), w, top + LOAD - 4 - yOf(mine[i]));
      }
      if (capacity[i] <= peak) {
        g.fillStyle = "#333";
        g.fillRect(x0, yOf(capacity[i]), w, 1.5);
      }
    }
    g.restore();
    g.strokeStyle = "#ccc";
    g.beginPath();
    g.moveTo(0, top + LOAD - 0.5);
    g.lineTo(width, top + LOAD - 0.5);
    g.stroke();
  }

  drawAxis(g, width, height) {
    const [t0, t1] = this.view;
    g.fillStyle = "#fff";
    g.fillRect(0, 0, width, AXIS);
    g.fillStyle = "#444";
    const span = t1 - t0;
    const tick = niceTick(span / Math.max(1, (width - LABEL) / 110), plan.use.step * 1000);
    for (let t = Math.ceil(t0 / tick) * tick; t <= t1; t += tick) {
      const x = this.x(t, width);
      g.fillRect(x, AXIS - 6, 1, 6);
      g.fillText(shortInstant(t, span), x + 3, AXIS - 10);
      g.fillStyle = "rgba(0,0,0,0.06)";
      g.fillRect(x, AXIS, 1, height);
      g.fillStyle = "#444";
    }
    g.save();
    g.setLineDash([4, 3]);
    g.strokeStyle = "#c77700";
    for (const [index, change] of capacityChanges(this.resource).entries()) {
      if (change.t < t0 || change.t > t1) continue;
      const x = this.x(change.t, width) + 0.5;
      g.beginPath();
      g.moveTo(x, AXIS);
      g.lineTo(x, height);
      g.stroke();
      g.fillStyle = "#c77700";
      g.fillText(`capacity ${amount(this.resource, change.to)}`, x + 3, AXIS + 12 + (index % 2) * 14);
    }
    g.restore();
    if (plan.now >= t0 && plan.now <= t1) {
      const x = this.x(plan.now, width);
      g.fillStyle = "#d22";
      g.fillRect(x - 1, 0, 2, height);
      g.fillText("now", x + 4, 11);
    }
    g.fillStyle = "#fff";
    g.fillRect(0, 0, LABEL - 2, AXIS);
    g.fillStyle = "#666";
    g.fillText(this.caption(this.rows.length), 6, 18);
  }
}

const TICKS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
  172800, 604800].map((s) => s * 1000);

function niceTick(least, step) {
  return TICKS.find((t) => t >= least && t >= Math.min(step, 60000)) || TICKS[TICKS.length - 1];
}

function fit(g, text, width) {
  if (g.measureText(text).width <= width) return text;
  let cut = text;
  while (cut.length > 1 && g.measureText(`${cut}…`).width > width) cut = cut.slice(0, -1);
  return `${cut}…`;
}
