// Small helpers: building elements (text only, never HTML from data), and formatting times and resources.

/** An element with attributes and children (strings become text nodes). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function instant(t) {
  if (t === null || t === undefined || Number.isNaN(t)) return "–";
  return new Date(t).toISOString().replace("T", " ").replace(/:00\.000Z$|\.\d+Z$/, "").replace(/Z$/, "");
}

export function shortInstant(t, span) {
  const iso = new Date(t).toISOString();
  if (span <= 2 * 3600e3) return iso.slice(11, 16);
  if (span <= 3 * 86400e3) return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
  return iso.slice(5, 10);
}

const UNITS = [["TiB", 1024 * 1024], ["GiB", 1024], ["MiB", 1]];

/** A resource amount as the API gives it (memory in MiB) in a readable unit. */
export function amount(resource, value) {
  if (value === null || value === undefined) return "–";
  if (resource === "memory") {
    for (const [unit, size] of UNITS) {
      if (Math.abs(value) >= size || size === 1) return `${+(value / size).toFixed(1)} ${unit}`;
    }
  }
  return `${+Number(value).toFixed(1)}`;
}

export function resources(vector) {
  return Object.entries(vector || {}).map(([k, v]) => `${k} ${amount(k, v)}`).join(", ");
}

/** A stable colour per user. */
export function colour(key) {
  let hash = 0;
  for (const ch of String(key)) hash = (hash * 31 + ch.charCodeAt(0)) | 0;
  return `hsl(${Math.abs(hash) % 360}, 55%, 52%)`;
}

export function duration(seconds) {
  if (seconds % 86400 === 0) return `${seconds / 86400}d`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}
