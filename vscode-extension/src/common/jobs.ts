/**
 * The jobs this window knows about, built from the server's notifications.
 *
 * `troupe/jobEvent` streams every event of the jobs of this window's workspaces (and of the
 * jobs it started), each with the job's progress as the daemon computed it; {@link JobStore}
 * keeps, per job, that progress (state, phase, role, tokens, cost, the question waiting for the
 * user), the proposed changes, and the conversation the chat view shows. It is plain data: the
 * status bar, the commands and the chat view read it.
 */

import { entryFor, jobTitle } from "../chat/conversation";
import type { Disposable } from "./host";
import { VIEWER_LINK_TTL_MS } from "./viewer";
import {
  ACTIVE_STATES,
  FINAL_STATES,
  type ChangeProposedParams,
  type JobInfo,
  type JobProgress,
  type QuestionParams,
  type StreamEvent,
} from "./protocol";

/** Old finished jobs are forgotten beyond this many; a job keeps at most MAX_ENTRIES entries. */
export const MAX_JOBS = 50;
export const MAX_ENTRIES = 2000;

export interface PendingQuestion {
  jobId: string;
  questionId: string;
  text: string;
}

export interface PendingChange {
  jobId: string;
  changeId: string;
  files: string[];
  diff: string;
}

export interface JobRecord {
  id: string;
  kind: string;
  state: string;
  title: string;
  workspace?: string;
  phase?: string;
  role?: string;
  tokens: number;
  cost: number;
  question?: PendingQuestion;
  entries: TroupeView.Entry[];
  /** Set once a job's title came from its request (not guessed from its kind). */
  titled: boolean;
  /** Set once the daemon's final description arrived (`troupe/jobFinished`): result and usage are in. */
  finished: boolean;
  /** The one-time run viewer link `troupe/jobFinished` brought, until it is used or too old; never shown. */
  viewerLink?: { url: string; at: number };
}

export type JobListener = (jobId: string, entry?: TroupeView.Entry) => void;

export class JobStore {
  private readonly jobs = new Map<string, JobRecord>();
  private readonly listeners = new Set<JobListener>();

  onDidChange(listener: JobListener): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  get(jobId: string): JobRecord | undefined {
    return this.jobs.get(jobId);
  }

  /** Newest first. */
  all(): JobRecord[] {
    return [...this.jobs.values()].reverse();
  }

  active(): JobRecord[] {
    return this.all().filter((job) => ACTIVE_STATES.includes(job.state));
  }

  /** The job the status bar and a fresh chat view talk about: the newest active one, else the newest. */
  current(): JobRecord | undefined {
    return this.active()[0] ?? this.all()[0];
  }

  pendingQuestions(): PendingQuestion[] {
    return this.all().flatMap((job) => (job.question ? [job.question] : []));
  }

  pendingChanges(): PendingChange[] {
    return this.all().flatMap((job) => job.entries.flatMap((entry) =>
      entry.kind === "change" && entry.state === "proposed"
        ? [{ jobId: job.id, changeId: entry.changeId, files: entry.files, diff: entry.diff }] : []));
  }

  summaries(): TroupeView.JobSummary[] {
    return this.all().map((job) => {
      const summary: TroupeView.JobSummary = {
        id: job.id, kind: job.kind, state: job.state, title: job.title,
        active: ACTIVE_STATES.includes(job.state), waiting: job.question !== undefined,
        tokens: job.tokens, cost: job.cost,
      };
      if (job.phase) summary.phase = job.phase;
      return summary;
    });
  }

  /** A job this window started: its title comes from what the user asked. */
  started(jobId: string, kind: string, title: string): void {
    const job = this.record(jobId, kind);
    job.title = title;
    job.titled = true;
    this.changed(jobId);
  }

  onEvent(event: StreamEvent): void {
    const jobId = event.job_id;
    if (!jobId) return; // watcher notices: not a job
    const job = this.record(jobId);
    if (event.workspace) job.workspace = event.workspace;
    if (event.progress) this.progressed(job, event.progress);
    if (event.kind === "job_state" && !job.titled && event.data.title) { // the daemon's title, on the queued event
      job.title = event.data.title;
      job.titled = true;
    }
    const entry = entryFor(event, jobId, job.entries);
    if (entry) this.upsert(job, entry);
    else this.changed(jobId);
  }

  onQuestion(params: QuestionParams): void {
    const job = this.record(params.jobId);
    job.question = { jobId: params.jobId, questionId: params.questionId, text: params.text };
    const id = `q:${params.questionId || params.text}`;
    const existing = job.entries.find((e) => e.id === id);
    if (!existing) {
      this.upsert(job, { id, kind: "question", jobId: params.jobId, questionId: params.questionId,
        text: params.text, to: "human" });
    } else {
      this.changed(params.jobId);
    }
  }

  onChangeProposed(params: ChangeProposedParams): void {
    const job = this.record(params.jobId);
    const id = `c:${params.changeId}`;
    if (job.entries.some((e) => e.id === id)) return;
    this.upsert(job, { id, kind: "change", changeId: params.changeId, files: params.files, diff: params.diff,
      state: "proposed", ...(params.testsFailed ? { testsFailed: params.testsFailed } : {}) });
  }

  /**
   * A job's full description (`troupe/jobFinished`, `troupe/jobs`). A run viewer link (only
   * `troupe/jobFinished` has one) is kept for {@link takeViewerLink} and adds "Open in viewer".
   */
  onJob(info: JobInfo, viewerUrl?: string, now = Date.now()): void {
    const job = this.record(info.id, info.kind);
    job.kind = info.kind;
    job.state = info.state;
    job.finished = FINAL_STATES.includes(info.state);
    if (info.workspace) job.workspace = info.workspace;
    if (!job.titled) {
      job.title = jobTitle(info);
      job.titled = true;
    }
    if (info.progress) this.progressed(job, { ...info.progress, state: info.state });
    const answer = info.result?.answer;
    if (answer?.trim() && !job.entries.some((e) => e.kind === "result")) {
      this.upsert(job, { id: "result", kind: "result", text: answer });
    }
    const error = info.error;
    if (error && !job.entries.some((e) => (e.kind === "state" && e.error) || (e.kind === "log" && e.text === error))) {
      this.upsert(job, { id: "error", kind: "state", state: info.state, error });
    }
    if (viewerUrl && job.finished) {
      job.viewerLink = { url: viewerUrl, at: now };
      this.upsert(job, { id: "viewer", kind: "viewer", jobId: info.id });
    }
    this.changed(info.id);
  }

  /** The job's run viewer link from `troupe/jobFinished`, once, while it is fresh; then undefined. */
  takeViewerLink(jobId: string, now = Date.now()): string | undefined {
    const job = this.jobs.get(jobId);
    const link = job?.viewerLink;
    if (!job || !link) return undefined;
    job.viewerLink = undefined;
    return now - link.at <= VIEWER_LINK_TTL_MS ? link.url : undefined;
  }

  /** The user applied or discarded a change (or that failed): the chat view shows it. */
  markChange(changeId: string, state: TroupeView.ChangeState, note?: string): void {
    for (const job of this.jobs.values()) {
      const entry = job.entries.find((e) => e.kind === "change" && e.changeId === changeId);
      if (entry && entry.kind === "change") {
        const updated: TroupeView.Entry = { ...entry, state };
        if (note) updated.note = note;
        else delete updated.note;
        this.upsert(job, updated);
      }
    }
  }

  /** The user answered: the question is no longer pending (the daemon's answer event follows). */
  answered(jobId: string, questionId: string, text: string): void {
    const job = this.jobs.get(jobId);
    if (!job) return;
    if (job.question && (job.question.questionId === questionId || !questionId)) job.question = undefined;
    const entry = job.entries.find((e) => e.kind === "question" && e.questionId === questionId);
    if (entry && entry.kind === "question") this.upsert(job, { ...entry, answer: text, answeredBy: "you" });
    else this.changed(jobId);
  }

  // ---------------------------------------------------------------- internals

  /** The daemon's progress of the job (with an event or a JobInfo): shown as it is, never re-counted here. */
  private progressed(job: JobRecord, progress: JobProgress): void {
    job.state = progress.state ?? job.state;
    if (progress.phase) job.phase = progress.phase;
    if (progress.role) job.role = progress.role;
    // Never lowered: a finished job's JobInfo may count less than the events it streamed.
    job.tokens = Math.max(job.tokens, progress.tokens ?? 0);
    job.cost = Math.max(job.cost, progress.cost ?? 0);
    const question = progress.question;
    job.question = question && ACTIVE_STATES.includes(job.state)
      ? { jobId: job.id, questionId: question.question_id, text: question.text } : undefined;
  }

  private record(jobId: string, kind = "job"): JobRecord {
    let job = this.jobs.get(jobId);
    if (!job) {
      job = { id: jobId, kind, state: "queued", title: `${kind} ${jobId}`, tokens: 0, cost: 0, entries: [],
        titled: false,
        finished: false };
      this.jobs.set(jobId, job);
      this.forgetOld();
    } else if (job.kind === "job" && kind !== "job") {
      job.kind = kind;
      if (!job.titled) job.title = `${kind} ${jobId}`;
    }
    return job;
  }

  private forgetOld(): void {
    if (this.jobs.size <= MAX_JOBS) return;
    for (const job of this.jobs.values()) {
      if (this.jobs.size <= MAX_JOBS) break;
      if (!ACTIVE_STATES.includes(job.state)) this.jobs.delete(job.id);
    }
  }

  private upsert(job: JobRecord, entry: TroupeView.Entry): void {
    const at = job.entries.findIndex((e) => e.id === entry.id);
    if (at >= 0) job.entries[at] = entry;
    else {
      job.entries.push(entry);
      if (job.entries.length > MAX_ENTRIES) job.entries.splice(0, job.entries.length - MAX_ENTRIES);
    }
    this.changed(job.id, entry);
  }

  private changed(jobId: string, entry?: TroupeView.Entry): void {
    for (const listener of this.listeners) listener(jobId, entry);
  }
}
