/**
 * Routing the server's `troupe/…` notifications to the job store, the status bar and the
 * notices, after checking their shape: a malformed notification is logged and dropped.
 */

import type { Disposable, Log } from "./host";
import type { JobStore } from "./jobs";
import {
  type ChangeProposedParams,
  type JobFinishedParams,
  type JobInfo,
  Notifications,
  type QuestionParams,
  type ServerStatus,
  type StreamEvent,
} from "./protocol";
import { asViewerUrl } from "./viewer";

export interface NotificationSource {
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
}

export interface NotificationSinks {
  store: JobStore;
  log: Log;
  status(status: ServerStatus): void;
  question(params: QuestionParams): void;
  changeProposed(params: ChangeProposedParams): void;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === "string";

export function asStatus(p: unknown): ServerStatus | undefined {
  const daemon = isObj(p) ? p["daemon"] : undefined;
  if (!isObj(p) || (daemon !== "connecting" && daemon !== "connected" && daemon !== "unreachable")) return undefined;
  const n = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  return { daemon, reason: isStr(p["reason"]) ? p["reason"] : "", activeJobs: n(p["activeJobs"]),
    workspaces: Array.isArray(p["workspaces"]) ? p["workspaces"].filter(isStr) : [],
    promptTokens: n(p["promptTokens"]), completionTokens: n(p["completionTokens"]), tokens: n(p["tokens"]),
    cost: n(p["cost"]) };
}

export function asEvent(p: unknown): StreamEvent | undefined {
  const event = isObj(p) ? p["event"] : undefined;
  if (!isObj(event) || !isStr(event["kind"])) return undefined;
  return { ...event, kind: event["kind"], data: isObj(event["data"]) ? event["data"] : {} } as StreamEvent;
}

export function asQuestion(p: unknown): QuestionParams | undefined {
  if (!isObj(p) || !isStr(p["jobId"]) || !isStr(p["text"])) return undefined;
  return { jobId: p["jobId"], questionId: isStr(p["questionId"]) ? p["questionId"] : "", text: p["text"] };
}

export function asChange(p: unknown): ChangeProposedParams | undefined {
  if (!isObj(p) || !isStr(p["jobId"]) || !isStr(p["changeId"])) return undefined;
  const files = Array.isArray(p["files"]) ? p["files"].filter(isStr) : [];
  return { jobId: p["jobId"], changeId: p["changeId"], files, diff: isStr(p["diff"]) ? p["diff"] : "",
    ...(isStr(p["testsFailed"]) && p["testsFailed"] ? { testsFailed: p["testsFailed"] } : {}) };
}

export function asJob(p: unknown): JobInfo | undefined {
  const job = isObj(p) ? p["job"] : undefined;
  if (!isObj(job) || !isStr(job["id"]) || !isStr(job["kind"]) || !isStr(job["state"])) return undefined;
  return job as unknown as JobInfo;
}

/** `troupe/jobFinished`: the job, and its run viewer link when it is an http(s) URL (else left out). */
export function asJobFinished(p: unknown): JobFinishedParams | undefined {
  const job = asJob(p);
  if (!job) return undefined;
  const url = isObj(p) ? asViewerUrl(p["viewerUrl"]) : undefined;
  return url ? { job, viewerUrl: url } : { job };
}

export function routeNotifications(source: NotificationSource, sinks: NotificationSinks): Disposable[] {
  const route = <T>(method: string, parse: (p: unknown) => T | undefined, use: (value: T) => void): Disposable =>
    source.onNotification(method, (params) => {
      const value = parse(params);
      if (value === undefined) sinks.log.warn(`ignored a malformed ${method}: ${JSON.stringify(params)?.slice(0, 200)}`);
      else use(value);
    });
  return [
    route(Notifications.status, asStatus, (s) => sinks.status(s)),
    route(Notifications.jobEvent, asEvent, (e) => sinks.store.onEvent(e)),
    route(Notifications.question, asQuestion, (q) => {
      sinks.store.onQuestion(q);
      sinks.question(q);
    }),
    route(Notifications.changeProposed, asChange, (c) => {
      sinks.store.onChangeProposed(c);
      sinks.changeProposed(c);
    }),
    route(Notifications.jobFinished, asJobFinished, (f) => sinks.store.onJob(f.job, f.viewerUrl)),
  ];
}
