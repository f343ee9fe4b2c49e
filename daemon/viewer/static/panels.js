// The small side panels: the team's questions and answers, tool and test runs, findings.

import { h, fmtSeconds } from "./dom.js";
import { avatar } from "./conversation.js";
import { roleLabel } from "./roles.js";

function placeholder(list, text) {
  if (!list.children.length) list.append(h("li", { class: "placeholder", text }));
}

function unplace(list) {
  list.querySelector(":scope > .placeholder")?.remove();
}

export class Questions {
  constructor(list) { this.list = list; }

  reset(job) {
    this.jobId = job ? job.id : "";
    this.list.replaceChildren();
    this.pending = new Map();
    placeholder(this.list, "No questions asked.");
  }

  apply(event) {
    const data = event.data || {};
    if (event.kind === "question") {
      unplace(this.list);
      const toYou = data.to === "human";
      const answer = h("div", { class: "qa-a pending" }, toYou ? "waiting for your answer: " : "waiting…",
        toYou ? h("code", { text: `troupe answer ${this.jobId.slice(0, 8)} "…"` }) : null);
      const who = event.role ? roleLabel(event.role) : "the team";
      const item = h("li", { class: "qa" },
        h("div", { class: "qa-q" }, avatar(event.role || "team"),
          h("div", {}, h("div", { class: "qa-who", text: `${who} asks${toYou ? " you" : ""}` }),
            h("div", { class: "qa-text", text: String(data.text ?? "") }))),
        answer);
      this.pending.set(data.question_id, answer);
      this.list.append(item);
    } else if (event.kind === "answer") {
      let answer = this.pending.get(data.question_id);
      if (!answer) {  // an answer whose question we never saw: show it on its own
        unplace(this.list);
        answer = h("div", { class: "qa-a" });
        this.list.append(h("li", { class: "qa" }, answer));
      }
      answer.classList.remove("pending");
      answer.replaceChildren(avatar(data.by || event.role),
        h("div", {}, h("div", { class: "qa-who", text: `${roleLabel(data.by || event.role)} answers` }),
          h("div", { class: "qa-text", text: String(data.text ?? "") })));
    }
  }
}

export class ToolRuns {
  constructor(list) { this.list = list; }

  reset() {
    this.list.replaceChildren();
    placeholder(this.list, "No tests or tools run yet.");
  }

  apply(event) {
    if (event.kind !== "tool_run") return;
    const data = event.data || {};
    unplace(this.list);
    const counts = [];
    if (typeof data.passed === "number") counts.push(h("span", { class: "count pass", text: `${data.passed} passed` }));
    if (typeof data.failed === "number") counts.push(h("span", { class: "count fail", text: `${data.failed} failed` }));
    this.list.append(h("li", { class: `tool ${data.ok ? "ok" : "bad"}`, dataset: { tool: data.tool } },
      h("span", { class: "badge", text: data.ok ? "PASS" : "FAIL" }),
      h("div", { class: "tool-body" },
        h("div", { class: "tool-name" }, h("span", { text: String(data.tool || "tool") }),
          typeof data.seconds === "number" ? h("span", { class: "tool-secs", text: fmtSeconds(data.seconds) }) : null),
        h("div", { class: "tool-summary", text: String(data.summary || "") }),
        counts.length ? h("div", { class: "counts" }, counts) : null)));
  }
}

export class Findings {
  constructor(panel, list) { this.panel = panel; this.list = list; }

  reset() {
    this.list.replaceChildren();
    this.panel.hidden = true;
  }

  apply(event) {
    if (event.kind !== "finding") return;
    const data = event.data || {};
    this.panel.hidden = false;
    const where = `${data.file || "?"}:${data.start_line || "?"}`;
    this.list.append(h("li", { class: `finding ${data.severity || "info"}` },
      h("span", { class: "sev", text: String(data.severity || "info") }),
      h("div", {}, h("div", { class: "where", text: where }), h("div", { class: "qa-text", text: String(data.message || "") }))));
  }
}
