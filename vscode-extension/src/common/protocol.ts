/**
 * What the extension says to `troupe lsp` and hears back, named in one place.
 *
 * Mirrors the language server (lsp/features/commands.py, lsp/features/custom.py, lsp/jobs.py,
 * lsp/server.py): every `troupe.*` command takes ONE object with camelCase keys; the server's
 * custom notifications carry the daemon's own JSON (snake_case, from daemon/api/protocol.py).
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
  /** Not served by every server version: the extension falls back to `troupe experience search`. */
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

export type JobKind = "ask" | "build" | "change" | "review" | "test";
export type JobState = "queued" | "running" | "waiting_for_answer" | "succeeded" | "failed" | "cancelled";
export const ACTIVE_STATES: readonly string[] = ["queued", "running", "waiting_for_answer"];
export const FINAL_STATES: readonly string[] = ["succeeded", "failed", "cancelled"];
export type Severity = "critical" | "major" | "minor" | "info";
export const SEVERITIES: readonly Severity[] = ["critical", "major", "minor", "info"];

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

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
}

/** A job as the daemon describes it (daemon/api/protocol.py JobInfo). */
export interface JobInfo {
  id: string;
  kind: JobKind;
  state: JobState;
  priority?: number;
  workspace?: string | null;
  request?: { prompt?: string | null; files?: string[]; [key: string]: unknown };
  result?: { answer?: string; [key: string]: unknown } | null;
  error?: string | null;
  created_at?: number | null;
  started_at?: number | null;
  finished_at?: number | null;
  usage?: Usage;
  question?: { question_id: string; text: string } | null;
  last_seq?: number;
  /** What the job is about, computed by the daemon ("review on save: calc.py"). */
  title?: string;
  /** Its own test run failed: the daemon's summary ("Tests FAILED: 1 failed …"). */
  tests_failed?: string | null;
}

/** One event of a job (daemon/api/protocol.py StreamEvent), inside `troupe/jobEvent`. */
export interface StreamEvent {
  kind: string;
  data: Record<string, unknown>;
  job_id?: string | null;
  seq?: number | null;
  phase?: string | null;
  role?: string | null;
  at?: number | null;
  workspace?: string | null;
}

export interface JobEventParams {
  event: StreamEvent;
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

export interface SearchHit {
  kind: string;
  text: string;
  job_id?: string | null;
  file?: string | null;
  score?: number | null;
}

/** JSON-RPC error codes the server answers with (lsp/rpc.py). */
export const ErrorCodes = {
  methodNotFound: -32601,
  invalidParams: -32602,
  daemonUnreachable: -32001,
  requestFailed: -32803,
} as const;
