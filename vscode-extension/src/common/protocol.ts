/**
 * What the extension says to `troupe lsp` and hears back, named in one place.
 *
 * Mirrors the language server (lsp/features/commands.py, lsp/features/custom.py, lsp/jobs.py,
 * lsp/server.py): every `troupe.*` command takes ONE object with camelCase keys; the server's
 * custom notifications carry the daemon's own JSON (snake_case), typed in daemon.generated.ts.
 * The extension's own VS Code command ids are different (`troupe.askTeam`, …): the language
 * client registers the server's command ids itself.
 */

/** The language client's id: also the prefix of its `troupe.trace.server` setting. */
export const CLIENT_ID = "troupe";

/** `workspace/executeCommand` commands of the server. */
export const Commands = {
  ask: "troupe.ask",
  review: "troupe.review",
  test: "troupe.test",
  cancel: "troupe.cancel",
  answer: "troupe.answer",
  applyChange: "troupe.applyChange",
  discardChange: "troupe.discardChange",
  dismiss: "troupe.dismiss",
  explain: "troupe.explain",
  /** `{jobId?}` -> {@link ViewerAnswer}: a one-time run viewer link, opened by the server when it can. */
  openViewer: "troupe.openViewer",
} as const;

/** Custom requests (client -> server). */
export const Requests = {
  jobs: "troupe/jobs",
  getStatus: "troupe/getStatus",
  /** `{query, limit?}` -> SearchResults (an older server without it: `troupe experience search`). */
  experience: "troupe/experience",
} as const;

/** Custom notifications (server -> client). */
export const Notifications = {
  status: "troupe/status",
  jobEvent: "troupe/jobEvent",
  question: "troupe/question",
  changeProposed: "troupe/changeProposed",
  jobFinished: "troupe/jobFinished",
} as const;

// The daemon's own types (JobInfo, StreamEvent, every event's data, JobProgress, JobResult, …) are
// generated from daemon/messages.py and daemon/payloads.py into daemon.generated.ts.
export {
  ACTIVE_STATES,
  FINAL_STATES,
  JOB_KINDS,
  SEVERITIES,
  type ChangeInfo,
  type EventPayloads,
  type FindingInfo,
  type JobInfo,
  type JobKind,
  type JobProgress,
  type JobResult,
  type JobState,
  type SearchHit,
  type SearchResults,
  type Severity,
  type TroupeEvent as StreamEvent,
  type Usage,
} from "./daemon.generated";
import type { JobInfo, TroupeEvent } from "./daemon.generated";

export interface Range {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** `troupe.ask`: a question (`mode: "ask"`) or a change to propose (`mode: "change"`). */
export interface AskArgs {
  prompt: string;
  file?: string;
  selection?: Range;
  mode: "ask" | "change";
}

export interface JobStarted {
  jobId: string;
}

/** The `troupe/status` notification and the `troupe/getStatus` answer. */
export interface ServerStatus {
  daemon: "connecting" | "connected" | "unreachable";
  reason?: string;
  activeJobs: number;
  workspaces?: string[];
  promptTokens?: number;
  completionTokens?: number;
  tokens: number;
  cost: number;
}

export interface JobEventParams {
  event: TroupeEvent;
}

export interface QuestionParams {
  jobId: string;
  questionId: string;
  text: string;
}

export interface ChangeProposedParams {
  jobId: string;
  changeId: string;
  files: string[];
  diff: string;
  /** The change's own tests failed (the daemon's summary): offer it with a warning. */
  testsFailed?: string;
}

export interface JobFinishedParams {
  job: JobInfo;
  /** A one-time run viewer link on the job (spent at first use, valid 10 minutes); absent when the viewer is off. */
  viewerUrl?: string;
}

/** `troupe.openViewer`'s answer: `opened` false leaves opening `url` to the client. */
export interface ViewerAnswer {
  url: string;
  opened: boolean;
}

/** JSON-RPC error codes the server answers with (lsp/rpc.py). */
export const ErrorCodes = {
  methodNotFound: -32601,
  invalidParams: -32602,
  daemonUnreachable: -32001,
  requestFailed: -32803,
} as const;
