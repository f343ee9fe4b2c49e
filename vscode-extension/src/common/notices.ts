/**
 * Telling the user when the team needs them and the chat view is not showing that job: a
 * question (Answer… / Show Chat) or a proposed change (Apply / Discard / Show Chat).
 */

import type { Host } from "./host";
import type { ChangeProposedParams, QuestionParams } from "./protocol";

export interface NoticeDeps {
  host: Pick<Host, "showMessage">;
  isShowing(jobId: string): boolean;
  showChat(jobId: string): void;
  answer(question: QuestionParams): Promise<unknown>;
  apply(changeId: string): Promise<unknown>;
  discard(changeId: string): Promise<unknown>;
}

export const ANSWER = "Answer…";
export const SHOW_CHAT = "Show Chat";
export const APPLY = "Apply";
export const APPLY_ANYWAY = "Apply Anyway";
export const DISCARD = "Discard";

function short(text: string, limit = 300): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

export async function noticeQuestion(params: QuestionParams, deps: NoticeDeps): Promise<void> {
  if (deps.isShowing(params.jobId)) return;
  const choice = await deps.host.showMessage("info", `Troupe asks: ${short(params.text)}`, ANSWER, SHOW_CHAT);
  if (choice === ANSWER) await deps.answer(params);
  else if (choice === SHOW_CHAT) deps.showChat(params.jobId);
}

export async function noticeChange(params: ChangeProposedParams, deps: NoticeDeps): Promise<void> {
  if (deps.isShowing(params.jobId)) return;
  const files = params.files.length ? params.files.join(", ") : "no file";
  const choice = params.testsFailed
    ? await deps.host.showMessage("warning", `Troupe proposes a change to ${short(files, 120)}, but its own tests ` +
      `failed: ${short(params.testsFailed, 200)}`, APPLY_ANYWAY, DISCARD, SHOW_CHAT)
    : await deps.host.showMessage("info", `Troupe proposes a change to ${short(files, 120)}.`, APPLY, DISCARD, SHOW_CHAT);
  if (choice === APPLY || choice === APPLY_ANYWAY) await deps.apply(params.changeId);
  else if (choice === DISCARD) await deps.discard(params.changeId);
  else if (choice === SHOW_CHAT) deps.showChat(params.jobId);
}
