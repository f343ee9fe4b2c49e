// The viewer's reads: plain fetch for lists and pages of events, EventSource for a live job.
// Same origin only; the session cookie (set by the one-time link) goes along by itself.

// Where the page is served: /viewer, or behind a port-forwarding proxy /proxy/8765/viewer (code-server).
export const ROOT = location.pathname.replace(/\/viewer(\/|\/jobs\/[^/]+)?$/, "/viewer");
const BASE = `${ROOT}/api`;
export const KINDS = ["job_state", "phase_started", "phase_finished", "message", "question", "answer",
  "tool_run", "usage", "code_state", "change_proposed", "finding", "log"];
export const FINAL = new Set(["succeeded", "failed", "cancelled"]);

export class ApiError extends Error {}

async function getJSON(path) {
  const response = await fetch(BASE + path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  let body = null;
  try { body = await response.json(); } catch { /* not JSON: said below */ }
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    throw new ApiError(message);
  }
  return body;
}

export const listJobs = (limit = 50) => getJSON(`/jobs?limit=${limit}`).then((r) => r.jobs);
export const getJob = (id) => getJSON(`/jobs/${encodeURIComponent(id)}`);

/** Every stored event of a finished job, in order (paged by seq). */
export async function allEvents(id) {
  const events = [];
  for (;;) {
    const after = events.length ? events[events.length - 1].seq : 0;
    const page = await getJSON(`/jobs/${encodeURIComponent(id)}/events?after=${after}&limit=1000`);
    events.push(...page.events);
    if (page.events.length < 1000) return events;
  }
}

/**
 * Follow a job live. The stream sends the stored backlog first, then events as they happen;
 * after a dropped connection EventSource resumes by itself with Last-Event-ID. Events are
 * handed on once each, in seq order; the stream is closed after the job's final state.
 */
export function follow(id, { onEvent, onStatus }) {
  let last = 0;
  const source = new EventSource(`${BASE}/jobs/${encodeURIComponent(id)}/events?after=0`);
  const handle = (message) => {
    let event;
    try { event = JSON.parse(message.data); } catch { return; }
    if (typeof event.seq === "number") {
      if (event.seq <= last) return;
      last = event.seq;
    }
    onEvent(event);
    if (FINAL.has(event.progress?.state)) {
      source.close();
      onStatus("done");
    }
  };
  for (const kind of KINDS) source.addEventListener(kind, handle);
  source.onopen = () => onStatus("live");
  source.onerror = () => onStatus(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
  return { close: () => source.close() };
}
