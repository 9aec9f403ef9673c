// The dashboard's shell: logging in (the token kept in sessionStorage), the views by the address's #fragment, and
// live updates by polling the plan's version (/v1/ready): a decision or a clock move changes it, and the views
// are drawn again from the API's answers, without a reload.

import { api, session, ApiFailure } from "./api.js";
import { plan, loadPlan, loadShapes, lazy } from "./plan.js";
import { instant } from "./format.js";
import * as views from "./views.js";

const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);
let current = null;   // the view shown: {name, arg, refresh?}
let polling = null;
let busy = false;

function status(text, kind = "") {
  const el = $("status");
  el.textContent = text;
  el.className = `status ${kind}`;
}

async function logIn(token) {
  session.token = token;
  try {
    plan.who = await api("/v1/whoami");
  } catch (error) {
    session.token = null;
    plan.who = null;
    status(error instanceof ApiFailure && error.status === 401 ? "that token is not valid here" : error.message,
      "bad");
    return false;
  }
  $("login").hidden = true;
  $("me").hidden = false;
  $("whoami").textContent = `${plan.who.user} (${plan.who.role})`;
  $("welcome").hidden = true;
  $("view").hidden = false;
  await refresh(true);
  startPolling();
  return true;
}

function logOut() {
  session.token = null;
  plan.who = null;
  clearInterval(polling);
  location.hash = "";
  location.reload();
}

/** Read the plan again and draw the view shown; the allocations follow (the shapes replace the bars). */
async function refresh(first = false) {
  if (busy) return;
  busy = true;
  try {
    await loadPlan();
    if (first || !current) route(); else if (current.refresh) await current.refresh();
    status(`plan clock ${instant(plan.now)} · version ${plan.version}`);
    if (!lazy()) {  // else the timeline reads the allocations of the rows in view
      await loadShapes();
      if (current && current.refresh && current.shapes) await current.refresh();
    }
    document.body.dataset.version = String(plan.version);
  } catch (error) {
    status(error.message, "bad");
    if (error instanceof ApiFailure && error.status === 401) logOut();
  } finally {
    busy = false;
  }
}

function startPolling() {
  clearInterval(polling);
  polling = setInterval(async () => {
    if (busy || document.hidden) return;
    try {
      const ready = await api("/v1/ready");
      if (ready.plan_version !== plan.version) await refresh();
    } catch (error) {
      status(`the server does not answer: ${error.message}`, "bad");
    }
  }, POLL_MS);
}

function route() {
  if (!plan.who) return;
  const [name, ...rest] = (location.hash.replace(/^#\/?/, "") || "timeline").split("/");
  const arg = rest.map(decodeURIComponent).join("/");
  const view = views.VIEWS[name] || views.VIEWS.timeline;
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("active", link.dataset.view === name);
  }
  if (current && current.leave) current.leave();
  const root = $("view");
  root.replaceChildren();
  current = view(root, arg, { open: (reservation) => { location.hash = `#/reservation/${encodeURIComponent(reservation)}`; },
    refresh: () => refresh() }) || {};
}

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  if (token) await logIn(token);
});
$("logout").addEventListener("click", logOut);
window.addEventListener("hashchange", route);
if (session.token) logIn(session.token);
