/**
 * The `@troupe` chat participant, for VS Code builds whose Chat view is there (in practice with
 * Copilot Chat installed). It forwards to the same jobs as the commands and streams the job:
 * phases as progress, then questions, findings, proposed diffs (with Apply / Discard buttons)
 * and the answer as Markdown. The chat view (panel.ts) works without it.
 */

import type { Disposable } from "../common/host";
import type { JobStore } from "../common/jobs";
import { FINAL_STATES, type JobStarted } from "../common/protocol";

export const PARTICIPANT_ID = "troupe.team";
/** How long to wait for `troupe/jobFinished` after the final state (it can be lost with the daemon). */
export const FINISH_GRACE_MS = 3000;

export interface ChatStream {
  progress(text: string): void;
  markdown(text: string): void;
  button(command: { command: string; title: string; arguments?: unknown[] }): void;
}

export interface ChatRequest {
  prompt: string;
  command?: string | undefined;
}

export interface CancellationToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): Disposable;
}

export interface ParticipantDeps {
  store: JobStore;
  ask(prompt: string, mode: "ask" | "change"): Promise<JobStarted | undefined>;
  review(): Promise<JobStarted | undefined>;
  test(): Promise<JobStarted | undefined>;
  cancel(jobId: string): Promise<unknown>;
  /** How long to wait for `troupe/jobFinished` after the final state (default FINISH_GRACE_MS). */
  graceMs?: number;
}

/** A Markdown code fence longer than any run of backticks in the text. */
export function fenced(text: string, language = ""): string {
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text.replace(/\n$/, "")}\n${fence}\n`;
}

/** Text from the model shown as Markdown: no raw HTML, no accidental headings from "#" lines. */
export function quoted(text: string): string {
  return text.replace(/[<>&]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;" }[c] ?? c));
}

function show(entry: TroupeView.Entry, stream: ChatStream): void {
  switch (entry.kind) {
    case "phase":
      stream.progress(entry.cycle ? `${entry.phase} (round ${entry.cycle})` : entry.phase);
      return;
    case "question":
      if (entry.to !== "human" || entry.answer !== undefined) return;
      stream.markdown(`**The team asks:** ${quoted(entry.text)}\n\n`);
      stream.button({ command: "troupe.answerQuestion", title: "Answer…",
        arguments: [{ jobId: entry.jobId, questionId: entry.questionId, question: entry.text }] });
      return;
    case "change":
      if (entry.state !== "proposed") return;
      stream.markdown(`**Proposed change** to ${entry.files.map((f) => `\`${f}\``).join(", ") || "no file"}:\n\n`);
      stream.markdown(fenced(entry.diff, "diff"));
      if (entry.testsFailed) stream.markdown(`\n⚠ **Its own tests failed:** ${quoted(entry.testsFailed)}\n\n`);
      stream.button({ command: "troupe.applyProposedChange", title: entry.testsFailed ? "Apply Anyway" : "Apply",
        arguments: [{ changeId: entry.changeId }] });
      stream.button({ command: "troupe.discardProposedChange", title: "Discard",
        arguments: [{ changeId: entry.changeId }] });
      return;
    case "finding":
      stream.markdown(`- **${entry.severity}** \`${entry.file}:${entry.line}\` ${quoted(entry.message)}\n`);
      return;
    case "tool":
      stream.progress(`${entry.tool}: ${entry.ok ? "passed" : "failed"}`);
      return;
    case "result":
      stream.markdown(`\n${quoted(entry.text)}\n`);
      return;
    case "state":
      if (entry.state === "failed" || entry.state === "cancelled") {
        stream.markdown(`\n*The job ${entry.state}${entry.error ? `: ${quoted(entry.error)}` : ""}.*\n`);
      }
      return;
    default:
      return;
  }
}

/** Handles one `@troupe` request: starts the job, streams it until it ends or the user stops it. */
export async function handleChatRequest(request: ChatRequest, stream: ChatStream, token: CancellationToken,
  deps: ParticipantDeps): Promise<{ metadata: { jobId?: string } }> {
  const prompt = request.prompt.trim();
  let started: JobStarted | undefined;
  if (request.command === "review") started = await deps.review();
  else if (request.command === "test") started = await deps.test();
  else if (!prompt) {
    stream.markdown("Ask the team something, e.g. `@troupe why does add() subtract?`, or use `/change`, " +
      "`/review`, `/test`.");
    return { metadata: {} };
  } else started = await deps.ask(prompt, request.command === "change" ? "change" : "ask");
  if (!started) {
    stream.markdown("The job did not start; the error message says why.");
    return { metadata: {} };
  }
  const jobId = started.jobId;
  stream.progress("The team is on it…");
  const seen = new Set<string>();
  const drain = (): boolean => {
    const job = deps.store.get(jobId);
    for (const entry of job?.entries ?? []) {
      const key = `${entry.id}:${entry.kind === "question" ? entry.answer ?? "" : ""}:${entry.kind === "change" ? entry.state : ""}`;
      if (seen.has(key)) continue;
      seen.add(key);
      show(entry, stream);
    }
    return job !== undefined && FINAL_STATES.includes(job.state);
  };
  // The final state arrives as an event; the answer and totals follow in troupe/jobFinished.
  const done = (): boolean => deps.store.get(jobId)?.finished === true;
  await new Promise<void>((resolve) => {
    const subscriptions: Disposable[] = [];
    let grace: ReturnType<typeof setTimeout> | undefined;
    const finish = (): void => {
      if (grace) clearTimeout(grace);
      subscriptions.forEach((d) => d.dispose());
      resolve();
    };
    const check = (): void => {
      if (!drain()) return;
      if (done()) finish();
      else grace ??= setTimeout(finish, deps.graceMs ?? FINISH_GRACE_MS);
    };
    subscriptions.push(deps.store.onDidChange((changed) => { if (changed === jobId) check(); }));
    subscriptions.push(token.onCancellationRequested(() => {
      void deps.cancel(jobId);
      finish();
    }));
    if (token.isCancellationRequested) finish();
    else check();
  });
  return { metadata: { jobId } };
}
