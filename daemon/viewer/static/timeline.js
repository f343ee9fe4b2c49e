// The phases as a timeline: one step per phase run (a loop's cycles are separate steps),
// running / done, with seconds and tokens once finished; the job's end state closes it.

import { h, clear, fmtInt, fmtSeconds } from "./dom.js";

export class Timeline {
  constructor(root) {
    this.root = root;
    this.reset();
  }

  reset() {
    clear(this.root);
    this.list = h("ol", { class: "steps" });
    this.root.append(this.list);
    this.steps = new Map();
    this.end = null;
  }

  key(data) {
    return `${data.phase}#${data.cycle || 0}`;
  }

  apply(event) {
    const data = event.data || {};
    if (event.kind === "phase_started") this.start(data);
    else if (event.kind === "phase_finished") this.finish(data);
    else if (event.kind === "job_state") this.state(data);
  }

  start(data) {
    const meta = h("span", { class: "step-meta", text: data.cycle ? `cycle ${data.cycle}` : "running…" });
    const item = h("li", { class: "step running", dataset: { phase: data.phase } },
      h("span", { class: "step-dot" }),
      h("span", { class: "step-name", text: String(data.phase).replaceAll("_", " ") }),
      meta);
    this.steps.set(this.key(data), { item, meta });
    this.list.insertBefore(item, this.end);
  }

  finish(data) {
    let step = this.steps.get(this.key(data));
    if (!step) {
      this.start(data);
      step = this.steps.get(this.key(data));
    }
    step.item.classList.replace("running", "done");
    const parts = [];
    if (data.cycle) parts.push(`cycle ${data.cycle}`);
    if (typeof data.seconds === "number") parts.push(fmtSeconds(data.seconds));
    if (data.tokens) parts.push(`${fmtInt(data.tokens)} tok`);
    step.meta.textContent = parts.join(" · ") || "done";
    if (data.conclusion) step.item.title = String(data.conclusion);
  }

  state(data) {
    const state = String(data.state || "");
    if (!["succeeded", "failed", "cancelled"].includes(state)) return;
    for (const { item, meta } of this.steps.values()) {
      if (!item.classList.contains("running")) continue;
      item.classList.replace("running", state === "succeeded" ? "done" : "stopped");
      if (state !== "succeeded") meta.textContent = state === "cancelled" ? "cancelled" : "stopped";
    }
    this.end?.remove();  // the error itself is in the job's header
    this.end = h("li", { class: `step end ${state}` }, h("span", { class: "step-dot" }),
      h("span", { class: "step-name", text: state }));
    this.list.append(this.end);
  }
}
