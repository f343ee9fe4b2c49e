import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { JobStore } from "../common/jobs";
import { ANSWER, APPLY, APPLY_ANYWAY, DISCARD, SHOW_CHAT, noticeChange, noticeQuestion, type NoticeDeps } from "../common/notices";
import { routeNotifications } from "../common/notifications";
import type { ChangeProposedParams, QuestionParams, ServerStatus } from "../common/protocol";
import { FakeConnection, FakeHost, FakeLog } from "./fakes";

function route() {
  const server = new FakeConnection();
  const store = new JobStore();
  const log = new FakeLog();
  const got: { status: ServerStatus[]; questions: QuestionParams[]; changes: ChangeProposedParams[] } =
    { status: [], questions: [], changes: [] };
  routeNotifications(server, { store, log, status: (s) => got.status.push(s), question: (q) => got.questions.push(q),
    changeProposed: (c) => got.changes.push(c) });
  return { server, store, log, got };
}

describe("the server's notifications", () => {
  it("reach the store, the status bar and the notices", () => {
    const { server, store, got } = route();
    server.emit("troupe/status", { daemon: "connected", reason: "connected", activeJobs: 1, workspaces: ["/ws"],
      promptTokens: 5, completionTokens: 5, tokens: 10, cost: 0.1 });
    server.emit("troupe/jobEvent", { event: { kind: "job_state", data: { state: "running" }, job_id: "j1", seq: 1,
      progress: { state: "running" } } });
    server.emit("troupe/question", { jobId: "j1", questionId: "q1", text: "Rename it?" });
    server.emit("troupe/changeProposed", { jobId: "j1", changeId: "c1", files: ["a.py"], diff: "+x" });
    server.emit("troupe/jobFinished", { job: { id: "j1", kind: "change", state: "succeeded", title: "change: p" } });
    assert.deepEqual(got.status, [{ daemon: "connected", reason: "connected", activeJobs: 1, workspaces: ["/ws"],
      promptTokens: 5, completionTokens: 5, tokens: 10, cost: 0.1 }]);
    assert.deepEqual(got.questions, [{ jobId: "j1", questionId: "q1", text: "Rename it?" }]);
    assert.deepEqual(got.changes, [{ jobId: "j1", changeId: "c1", files: ["a.py"], diff: "+x" }]);
    const job = store.get("j1")!;
    assert.equal(job.state, "succeeded");
    assert.equal(job.title, "change: p");
    assert.deepEqual(store.pendingChanges().map((c) => c.changeId), ["c1"]);
  });

  it("are logged and dropped when malformed", () => {
    const { server, store, log, got } = route();
    server.emit("troupe/status", { daemon: "maybe" });
    server.emit("troupe/status", { daemon: "connecting", reason: "starting the daemon" }); // valid: kept
    server.emit("troupe/jobEvent", { event: { data: {} } });
    server.emit("troupe/question", { jobId: 3 });
    server.emit("troupe/changeProposed", null);
    server.emit("troupe/jobFinished", { job: { id: "x" } });
    assert.deepEqual([got.status, got.questions, got.changes, store.all()],
      [[{ daemon: "connecting", reason: "starting the daemon", activeJobs: 0, workspaces: [], promptTokens: 0,
        completionTokens: 0, tokens: 0, cost: 0 }], [], [], []]);
    assert.equal(log.lines.filter((l) => l.startsWith("warn: ignored a malformed troupe/")).length, 5);
  });
});

function notices(showing = false) {
  const host = new FakeHost();
  const calls: string[] = [];
  const deps: NoticeDeps = {
    host, isShowing: () => showing, showChat: (j) => calls.push(`chat ${j}`),
    answer: async (q) => calls.push(`answer ${q.jobId} ${q.questionId}`),
    apply: async (c) => calls.push(`apply ${c}`), discard: async (c) => calls.push(`discard ${c}`),
  };
  return { host, calls, deps };
}

describe("notices", () => {
  it("ask the user the team's question with Answer… and Show Chat", async () => {
    const { host, calls, deps } = notices();
    host.messageAnswers.push(ANSWER, SHOW_CHAT);
    await noticeQuestion({ jobId: "j1", questionId: "q1", text: "Keep\n the old API?" }, deps);
    await noticeQuestion({ jobId: "j1", questionId: "q1", text: "again" }, deps);
    assert.deepEqual(host.messages[0], { kind: "info", message: "Troupe asks: Keep the old API?",
      actions: [ANSWER, SHOW_CHAT] });
    assert.deepEqual(calls, ["answer j1 q1", "chat j1"]);
  });

  it("offer a proposed change with Apply, Discard and Show Chat", async () => {
    const { host, calls, deps } = notices();
    host.messageAnswers.push(APPLY, DISCARD, undefined);
    const change = { jobId: "j1", changeId: "c1", files: ["calc.py", "util.py"], diff: "" };
    await noticeChange(change, deps);
    await noticeChange(change, deps);
    await noticeChange(change, deps);
    assert.deepEqual(host.messages[0], { kind: "info", message: "Troupe proposes a change to calc.py, util.py.",
      actions: [APPLY, DISCARD, SHOW_CHAT] });
    assert.deepEqual(calls, ["apply c1", "discard c1"]);
  });

  it("offer a change whose own tests failed as a warning with Apply Anyway, never a plain Apply", async () => {
    const { host, calls, deps } = notices();
    host.messageAnswers.push(APPLY_ANYWAY);
    await noticeChange({ jobId: "j1", changeId: "c1", files: ["calc.py"], diff: "",
      testsFailed: "Tests FAILED: 1 failed, 1 passed (pytest, 0.4 s)" }, deps);
    assert.deepEqual(host.messages[0], { kind: "warning", message: "Troupe proposes a change to calc.py, but its own " +
      "tests failed: Tests FAILED: 1 failed, 1 passed (pytest, 0.4 s)", actions: [APPLY_ANYWAY, DISCARD, SHOW_CHAT] });
    assert.deepEqual(calls, ["apply c1"]);
  });

  it("stay quiet when the chat view already shows that job", async () => {
    const { host, deps } = notices(true);
    await noticeQuestion({ jobId: "j1", questionId: "q1", text: "?" }, deps);
    await noticeChange({ jobId: "j1", changeId: "c1", files: [], diff: "" }, deps);
    assert.deepEqual(host.messages, []);
  });
});
