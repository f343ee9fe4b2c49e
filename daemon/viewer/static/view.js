// One job on the page: its header and every panel, fed one event at a time. Live streaming and
// replay both go through apply(), so a replay shows exactly what the live page showed.

import { $, h, fmtClock } from "./dom.js";
import { Timeline } from "./timeline.js";
import { Conversation } from "./conversation.js";
import { Questions, ToolRuns, Findings } from "./panels.js";
import { ChangeView } from "./diff.js";
import { UsageChart } from "./chart.js";

export function jobTitle(job) {
  if (typeof job.title === "string" && job.title.trim()) return job.title; // the daemon's, for every surface
  const request = job.request || {};
  const prompt = typeof request.prompt === "string" ? request.prompt.trim() : "";
  if (prompt) return prompt.split("\n")[0];
  const files = Array.isArray(request.files) ? request.files : [];
  return files.length ? `${job.kind} ${files.join(", ")}` : `${job.kind} job`;
}

export class JobView {
  constructor(root) {
    this.root = root;
    this.timeline = new Timeline($("#timeline", root));
    this.conversation = new Conversation($("#conversation", root));
    this.questions = new Questions($("#qa", root));
    this.tools = new ToolRuns($("#tests", root));
    this.findings = new Findings($("#findings-panel", root), $("#findings", root));
    this.change = new ChangeView($("#diff", root), $("#diff-meta", root));
    this.chart = new UsageChart($("#chart", root), $("#usage-totals", root));
    this.parts = [this.timeline, this.conversation, this.questions, this.tools, this.findings, this.change, this.chart];
  }

  /** Show ``job``'s header and empty panels, ready for its events. */
  reset(job) {
    this.job = job;
    this.root.hidden = false;
    this.root.dataset.jobId = job.id;
    $("#job-kind", this.root).textContent = job.kind;
    $("#job-title", this.root).textContent = jobTitle(job);
    $("#job-id", this.root).textContent = job.id;
    $("#job-where", this.root).textContent = job.workspace || "no workspace";
    $("#job-when", this.root).textContent = job.created_at ? `created ${fmtClock(job.created_at)}` : "";
    this.setState(job.state, job.error);
    this.timeline.reset();
    this.conversation.reset();
    this.questions.reset(job);
    this.tools.reset();
    this.findings.reset();
    this.change.reset();
    this.chart.reset(job.created_at);
    this.count = 0;
  }

  setState(state, error) {
    const badge = $("#job-state", this.root);
    badge.textContent = String(state || "").replaceAll("_", " ");
    badge.className = `state ${state}`;
    const note = $("#job-error", this.root);
    note.textContent = error ? String(error) : "";
    note.hidden = !error;
  }

  apply(event) {
    this.count += 1;
    // The job's state as the daemon computed it (event.progress); a replayed file may lack it.
    if (event.kind === "job_state") this.setState(event.progress?.state ?? event.data.state, event.data.error);
    for (const part of this.parts) part.apply(event);
    this.root.dataset.lastSeq = String(event.seq ?? "");
  }

  /** The text a person reads in the panels, without clock times: what replay must reproduce. */
  contentText() {
    const parts = ["#timeline", "#conversation", "#qa", "#tests", "#findings", "#diff"].map((sel) => {
      const copy = $(sel, this.root).cloneNode(true);
      copy.querySelectorAll(".ts").forEach((n) => n.remove());
      return copy.textContent;
    });
    return parts.join("\n§\n");
  }
}

export function emptyState(main, text) {
  const box = $("#empty", main);
  box.replaceChildren(h("p", { text }));
  box.hidden = false;
}
