// The dashboard's only way to the plan: the public /v1 API, with the bearer token the user logged in with.

const KEY = "rayon.token";

export class ApiFailure extends Error {
  constructor(status, message, hint) {
    super(message);
    this.status = status;
    this.hint = hint || "";
  }
}

export const session = {
  get token() { return sessionStorage.getItem(KEY); },
  set token(value) {
    if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY);
  },
};

/** One call of the API: the answer's JSON, or an ApiFailure carrying the API's own message and hint. */
export async function api(path, { method = "GET", body = null, type = "text/plain" } = {}) {
  const headers = {};
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  if (body !== null) headers["Content-Type"] = type;
  const response = await fetch(path, { method, headers, body });
  let data = null;
  try { data = await response.json(); } catch { data = null; }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiFailure(response.status, error.message || `${response.status} ${response.statusText}`, error.hint);
  }
  return data;
}

/** Every item of a paged listing (`{items, total}`), a page of `limit` at a time. */
export async function everything(path, limit = 1000) {
  const items = [];
  const sep = path.includes("?") ? "&" : "?";
  for (let offset = 0; ; offset += limit) {
    const page = await api(`${path}${sep}offset=${offset}&limit=${limit}`);
    items.push(...page.items);
    if (offset + limit >= page.total || page.items.length === 0) return items;
  }
}
