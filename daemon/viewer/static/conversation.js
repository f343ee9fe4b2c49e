// The conversation by role: a bubble per message with the speaker's avatar, grouped under a
// divider per phase; tool runs, code states and warnings as quiet notes in between. Fenced
// code in a message is shown as code; everything goes in as text, nothing is parsed as HTML.

import { h, fmtClock } from "./dom.js";
import { initials, roleColour, roleLabel } from "./roles.js";
import { renderDiff } from "./diff.js";

const LONG_CHARS = 900;
const LONG_LINES = 16;

export function avatar(role) {
  return h("span", { class: "avatar", style: { backgroundColor: roleColour(role) }, title: roleLabel(role),
    text: initials(role) });
}

const DIFF_LINE = /^(diff --git |index |--- |\+\+\+ |@@ |[ +\-\\])/;

/** Prose, with any unified diff in it (a "diff --git" line and what follows) rendered as a diff. */
function prose(text) {
  const lines = text.replace(/^\n+|\n+$/g, "").split("\n");
  const parts = [];
  let plain = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (!lines[i].startsWith("diff --git ")) { plain.push(lines[i]); continue; }
    let end = i + 1;
    while (end < lines.length && DIFF_LINE.test(lines[end])) end += 1;
    if (plain.length) parts.push(h("div", { class: "prose", text: plain.join("\n") }));
    parts.push(h("div", { class: "embedded-diff" }, renderDiff(lines.slice(i, end).join("\n"))));
    plain = [];
    i = end - 1;
  }
  if (plain.join("").trim()) parts.push(h("div", { class: "prose", text: plain.join("\n").replace(/^\n+|\n+$/g, "") }));
  return parts;
}

/** Split text into prose and fenced code blocks, as elements. */
export function richText(text) {
  const parts = [];
  const fence = /^(```|~~~)[^\n]*\n([\s\S]*?)(?:^\1[ \t]*$|(?![\s\S]))/gm;
  let at = 0;
  for (const match of text.matchAll(fence)) {
    if (match.index > at) parts.push(...prose(text.slice(at, match.index)));
    parts.push(h("pre", { class: "code" }, h("code", { text: match[2].replace(/\n$/, "") })));
    at = match.index + match[0].length;
  }
  if (at < text.length) parts.push(...prose(text.slice(at)));
  return parts;
}

export class Conversation {
  constructor(root) {
    this.root = root;
    this.phase = undefined;
  }

  reset() {
    this.root.replaceChildren();
    this.phase = undefined;
  }

  divider(event) {
    const phase = event.phase || null;
    if (phase === this.phase) return;
    this.phase = phase;
    if (phase) this.root.append(h("div", { class: "phase-divider" }, h("span", { text: phase.replaceAll("_", " ") })));
  }

  apply(event) {
    const data = event.data || {};
    if (event.kind === "message") this.message(event, data);
    else if (event.kind === "tool_run") this.note(event, data.ok ? "ok" : "bad",
      `${data.tool}: ${data.summary || (data.ok ? "ok" : "failed")}`);
    else if (event.kind === "code_state") this.note(event, "info",
      `code state #${data.index}: ${(data.files || []).join(", ") || "no files"}`);
    else if (event.kind === "log" && data.level !== "debug") this.note(event, data.level === "info" ? "info" : "bad",
      String(data.text || ""));
    else if (event.kind === "job_state" && data.state === "waiting_for_answer") this.note(event, "info",
      "waiting for your answer");
  }

  message(event, data) {
    this.divider(event);
    const role = event.role || "system";
    const text = String(data.text ?? "");
    const body = h("div", { class: "bubble-body" }, richText(text));
    const lines = text.split("\n").length;
    const bubble = h("div", { class: "bubble" + (data.reflection ? " reflection" : "") },
      h("div", { class: "bubble-head" },
        h("span", { class: "who", style: { color: roleColour(role) }, text: roleLabel(role) }),
        data.to ? h("span", { class: "to", text: `→ ${roleLabel(data.to)}` }) : null,
        data.reflection ? h("span", { class: "tag", text: "reflection" }) : null,
        h("span", { class: "ts", text: fmtClock(event.at) })),
      body);
    if (text.length > LONG_CHARS || lines > LONG_LINES) {
      body.classList.add("collapsed");
      const toggle = h("button", { class: "more", type: "button", text: `Show all ${lines} lines` });
      toggle.addEventListener("click", () => {
        const collapsed = body.classList.toggle("collapsed");
        toggle.textContent = collapsed ? `Show all ${lines} lines` : "Show less";
      });
      bubble.append(toggle);
    }
    this.root.append(h("div", { class: "msg", dataset: { role, seq: event.seq } }, avatar(role), bubble));
  }

  note(event, tone, text) {
    this.divider(event);
    this.root.append(h("div", { class: `note ${tone}` }, h("span", { text }), h("span", { class: "ts", text: fmtClock(event.at) })));
  }
}
