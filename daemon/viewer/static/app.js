// The run viewer page: routing (/viewer/ and /viewer/jobs/ID), the job list, and one job shown
// live (SSE) or replayed from the store at the chosen speed.

import { $ } from "./dom.js";
import { FINAL, ROOT, allEvents, follow, getJob, listJobs } from "./api.js";
import { JobView, emptyState } from "./view.js";
import { renderJobList } from "./joblist.js";
import { Replay } from "./replay.js";

const main = $("#main");
const view = new JobView($("#job"));
const conn = $("#conn");
let selected = null;
let stream = null;
let events = [];

const replay = new Replay({
  apply: (event) => view.apply(event),
  onProgress: (done, total) => { $("#replay-progress").textContent = `${done} / ${total} events`; },
  onDone: () => setMode("replayed"),
});

function setMode(mode, text) {
  document.body.dataset.mode = mode;
  $("#job").dataset.mode = mode;
  conn.className = `conn ${mode}`;
  conn.textContent = text || { live: "live", reconnecting: "reconnecting…", replaying: "replaying",
    replayed: "from the store", done: "finished", error: "error" }[mode] || "";
}

function jobIdFromPath() {
  const match = /\/viewer\/jobs\/([^/]+)$/.exec(location.pathname);
  return match ? decodeURIComponent(match[1]) : null;
}

async function refreshJobs() {
  try {
    renderJobList($("#job-list"), await listJobs(60), selected, (id) => {
      history.pushState({}, "", `${ROOT}/jobs/${encodeURIComponent(id)}`);
      route();
    });
  } catch (error) {
    setMode("error", `cannot list jobs: ${error.message}`);
  }
}

function stopAll() {
  stream?.close();
  stream = null;
  replay.stop();
}

async function showJob(id) {
  stopAll();
  selected = id;
  $("#empty").hidden = true;
  let job;
  try {
    job = await getJob(id);
  } catch (error) {
    $("#job").hidden = true;
    emptyState(main, `Cannot show job ${id}: ${error.message}`);
    return;
  }
  if (selected !== id) return;
  view.reset(job);
  document.title = `Troupe · ${job.kind} ${id.slice(0, 8)}`;
  events = [];
  if (FINAL.has(job.state)) {
    $("#replay-controls").hidden = false;
    const speed = new URLSearchParams(location.search).get("speed") || "instant";
    startReplay(speed);
  } else {
    $("#replay-controls").hidden = true;
    setMode("live");
    stream = follow(id, {
      onEvent: (event) => { events.push(event); view.apply(event); },
      onStatus: (status) => {
        if (status === "done") {
          setMode("done");
          $("#replay-controls").hidden = false;
          refreshJobs();
        } else if (status !== "closed") setMode(status);
      },
    });
  }
}

async function startReplay(speed) {
  stopAll();
  setSpeed(speed);
  const id = view.job.id;
  events = await allEvents(id);  // always from the store: a replay shows what was kept
  if (selected !== id) return;
  view.reset(view.job);
  setMode("replaying");
  replay.play(events);
}

function setSpeed(speed) {
  replay.setSpeed(speed);
  for (const button of document.querySelectorAll("#speeds button")) {
    button.setAttribute("aria-pressed", String(button.dataset.speed === speed));
  }
}

function route() {
  const id = jobIdFromPath();
  if (id) showJob(id);
  else {
    stopAll();
    selected = null;
    $("#job").hidden = true;
    document.title = "Troupe · run viewer";
    emptyState(main, "Pick a job on the left to see the team at work.");
  }
  refreshJobs();
}

for (const button of document.querySelectorAll("#speeds button")) {
  // The controls show only for finished jobs: a click changes a running replay's speed, else replays.
  button.addEventListener("click", () => {
    if (document.body.dataset.mode === "replaying") setSpeed(button.dataset.speed);
    else startReplay(button.dataset.speed);
  });
}
$("#replay").addEventListener("click", () => startReplay(replay.speed));
window.addEventListener("popstate", route);
setInterval(() => { if (!document.hidden) refreshJobs(); }, 5000);
window.troupeViewer = { contentText: () => view.contentText(), events: () => events.length };
route();
