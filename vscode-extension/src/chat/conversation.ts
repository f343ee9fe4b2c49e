/**
 * A job's events as the conversation the chat view shows: phases, who said what, the team's
 * questions (with the answer once given), tool runs, findings, proposed changes, the outcome.
 *
 * Entries have stable ids (`q:<question>`, `c:<change>`, else the event's sequence number), so
 * an event seen twice, or an answer arriving after its question, updates one entry in place.
 */

import type { JobInfo, StreamEvent } from "../common/protocol";

const SHOWN_STATES = ["running", "succeeded", "failed", "cancelled"];
const SHOWN_LOG_LEVELS = ["warning", "error", "critical"];

/**
 * The entry an event adds or updates, or undefined when the chat view has nothing to show for it.
 * `event.data` is typed by `event.kind` (daemon.generated.ts); the daemon checked it when recording.
 */
export function entryFor(event: StreamEvent, jobId: string, entries: readonly TroupeView.Entry[]):
  TroupeView.Entry | undefined {
  const id = (prefix: string): string => `${prefix}:${event.seq ?? `n${entries.length}`}`;
  switch (event.kind) {
    case "job_state": {
      const state = event.data.state ?? "";
      if (!SHOWN_STATES.includes(state)) return undefined;
      if (state === "running" && entries.some((e) => e.kind === "state" && e.state === "running")) return undefined;
      const entry: TroupeView.Entry = { id: id("s"), kind: "state", state };
      const error = event.data.error;
      // The engine often logged the same error just before: say it once.
      if (error && !entries.some((e) => e.kind === "log" && e.text === error)) entry.error = error;
      return entry;
    }
    case "phase_started": {
      const entry: TroupeView.Entry = { id: id("p"), kind: "phase", phase: event.phase ?? event.data.phase ?? "?" };
      if (typeof event.data.cycle === "number") entry.cycle = event.data.cycle;
      return entry;
    }
    case "message": {
      const entry: TroupeView.Entry = { id: id("m"), kind: "message", role: event.role ?? "team",
        text: event.data.text ?? "" };
      if (event.phase) entry.phase = event.phase;
      if (event.data.to) entry.to = event.data.to;
      return entry;
    }
    case "question": {
      const questionId = event.data.question_id ?? "";
      const text = event.data.text ?? "";
      const entryId = `q:${questionId || text}`;
      const known = entries.find((e) => e.id === entryId);
      if (known) return undefined;
      const entry: TroupeView.Entry = { id: entryId, kind: "question", jobId, questionId, text,
        to: event.data.to ?? "human" };
      if (event.role) entry.role = event.role;
      return entry;
    }
    case "answer": {
      const questionId = event.data.question_id ?? "";
      const text = event.data.text ?? "";
      const by = event.data.by ?? event.role ?? "someone";
      const question = entries.find((e) => e.kind === "question" && e.questionId === questionId);
      if (question && question.kind === "question") return { ...question, answer: text, answeredBy: by };
      return { id: id("a"), kind: "message", role: by, text };
    }
    case "tool_run":
      return { id: id("t"), kind: "tool", tool: event.data.tool ?? "tool", ok: event.data.ok === true,
        summary: event.data.summary ?? "" };
    case "change_proposed": {
      const changeId = event.data.change_id ?? "";
      if (entries.some((e) => e.id === `c:${changeId}`)) return undefined;
      const testsFailed = event.data.tests_failed;
      return { id: `c:${changeId}`, kind: "change", changeId, files: event.data.files ?? [],
        diff: event.data.diff ?? "", state: "proposed", ...(testsFailed ? { testsFailed } : {}) };
    }
    case "finding":
      return { id: `f:${String(event.data.id ?? event.seq ?? entries.length)}`, kind: "finding",
        file: event.data.file ?? "?", line: event.data.start_line ?? 0,
        severity: event.data.severity ?? "info", message: event.data.message ?? "" };
    case "log": {
      const level = event.data.level ?? "info";
      if (!SHOWN_LOG_LEVELS.includes(level.toLowerCase())) return undefined;
      return { id: id("l"), kind: "log", level, text: event.data.text ?? "" };
    }
    default:
      return undefined;
  }
}

function firstLine(text: string, limit = 60): string {
  const line = text.trim().split(/\r?\n/, 1)[0] ?? "";
  return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}

/** The daemon's title ("review on save: calc.py"), computed once for every surface. */
export function jobTitle(info: Pick<JobInfo, "kind" | "id" | "title">): string {
  return info.title?.trim() ? info.title : `${info.kind} ${info.id}`;
}

export { firstLine };
