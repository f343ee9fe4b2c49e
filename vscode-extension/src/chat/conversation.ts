/**
 * A job's events as the conversation the chat view shows: phases, who said what, the team's
 * questions (with the answer once given), tool runs, findings, proposed changes, the outcome.
 *
 * Entries have stable ids (`q:<question>`, `c:<change>`, else the event's sequence number), so
 * an event seen twice, or an answer arriving after its question, updates one entry in place.
 */

import type { JobInfo, StreamEvent } from "../common/protocol";

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

const SHOWN_STATES = ["running", "succeeded", "failed", "cancelled"];
const SHOWN_LOG_LEVELS = ["warning", "error", "critical"];

/** The entry an event adds or updates, or undefined when the chat view has nothing to show for it. */
export function entryFor(event: StreamEvent, jobId: string, entries: readonly TroupeView.Entry[]):
  TroupeView.Entry | undefined {
  const data = event.data ?? {};
  const id = (prefix: string): string => `${prefix}:${event.seq ?? `n${entries.length}`}`;
  switch (event.kind) {
    case "job_state": {
      const state = str(data["state"]) ?? "";
      if (!SHOWN_STATES.includes(state)) return undefined;
      if (state === "running" && entries.some((e) => e.kind === "state" && e.state === "running")) return undefined;
      const entry: TroupeView.Entry = { id: id("s"), kind: "state", state };
      const error = str(data["error"]);
      // The engine often logged the same error just before: say it once.
      if (error && !entries.some((e) => e.kind === "log" && e.text === error)) entry.error = error;
      return entry;
    }
    case "phase_started": {
      const entry: TroupeView.Entry = { id: id("p"), kind: "phase", phase: event.phase ?? str(data["phase"]) ?? "?" };
      if (typeof data["cycle"] === "number") entry.cycle = data["cycle"];
      return entry;
    }
    case "message": {
      const entry: TroupeView.Entry = { id: id("m"), kind: "message", role: event.role ?? "team",
        text: str(data["text"]) ?? "" };
      if (event.phase) entry.phase = event.phase;
      const to = str(data["to"]);
      if (to) entry.to = to;
      return entry;
    }
    case "question": {
      const questionId = str(data["question_id"]) ?? "";
      const text = str(data["text"]) ?? "";
      const entryId = `q:${questionId || text}`;
      const known = entries.find((e) => e.id === entryId);
      if (known) return undefined;
      const entry: TroupeView.Entry = { id: entryId, kind: "question", jobId, questionId, text,
        to: str(data["to"]) ?? "human" };
      if (event.role) entry.role = event.role;
      return entry;
    }
    case "answer": {
      const questionId = str(data["question_id"]) ?? "";
      const text = str(data["text"]) ?? "";
      const by = str(data["by"]) ?? event.role ?? "someone";
      const question = entries.find((e) => e.kind === "question" && e.questionId === questionId);
      if (question && question.kind === "question") return { ...question, answer: text, answeredBy: by };
      return { id: id("a"), kind: "message", role: by, text };
    }
    case "tool_run":
      return { id: id("t"), kind: "tool", tool: str(data["tool"]) ?? "tool", ok: data["ok"] === true,
        summary: str(data["summary"]) ?? "" };
    case "change_proposed": {
      const changeId = String(data["change_id"] ?? "");
      if (entries.some((e) => e.id === `c:${changeId}`)) return undefined;
      const testsFailed = str(data["tests_failed"]);
      return { id: `c:${changeId}`, kind: "change", changeId, files: strings(data["files"]),
        diff: str(data["diff"]) ?? "", state: "proposed", ...(testsFailed ? { testsFailed } : {}) };
    }
    case "finding":
      return { id: `f:${String(data["id"] ?? event.seq ?? entries.length)}`, kind: "finding",
        file: str(data["file"]) ?? "?", line: typeof data["start_line"] === "number" ? data["start_line"] : 0,
        severity: str(data["severity"]) ?? "info", message: str(data["message"]) ?? "" };
    case "log": {
      const level = str(data["level"]) ?? "info";
      if (!SHOWN_LOG_LEVELS.includes(level.toLowerCase())) return undefined;
      return { id: id("l"), kind: "log", level, text: str(data["text"]) ?? "" };
    }
    default:
      return undefined;
  }
}

function firstLine(text: string, limit = 60): string {
  const line = text.trim().split(/\r?\n/, 1)[0] ?? "";
  return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}

/** The daemon's title ("review on save: calc.py"); from the request only for an older daemon. */
export function jobTitle(info: Pick<JobInfo, "kind" | "id" | "request" | "title">): string {
  if (typeof info.title === "string" && info.title.trim()) return info.title;
  const prompt = info.request?.prompt;
  if (typeof prompt === "string" && prompt.trim()) return `${info.kind}: ${firstLine(prompt)}`;
  const files = Array.isArray(info.request?.files) ? info.request.files.filter((f) => typeof f === "string") : [];
  if (files.length) return `${info.kind} ${files.slice(0, 3).join(", ")}${files.length > 3 ? ", …" : ""}`;
  return `${info.kind} ${info.id}`;
}

export { firstLine };
