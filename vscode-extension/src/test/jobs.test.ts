import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { entryFor, jobTitle } from "../chat/conversation";
import { JobStore, MAX_JOBS } from "../common/jobs";
import type { EventPayloads, JobInfo, JobProgress, StreamEvent } from "../common/protocol";

let seq = 0;
function ev<K extends keyof EventPayloads>(kind: K, data: EventPayloads[K] = {},
  extra: Partial<Omit<StreamEvent, "kind" | "data">> = {}): StreamEvent {
  return { kind, data, job_id: "j1", seq: ++seq, workspace: "/ws", ...extra } as StreamEvent;
}

/** What the daemon says of a job (the fields a test does not name as a fresh job has them). */
function info(fields: Partial<JobInfo> & Pick<JobInfo, "id" | "kind" | "state">): JobInfo {
  return { priority: 10, title: "", ...fields };
}

function running(progress: JobProgress = {}): { progress: JobProgress } {
  return { progress: { state: "running", ...progress } };
}

describe("the job store", () => {
  it("shows the progress the daemon sent with each event: state, phase, role, tokens and cost", () => {
    const store = new JobStore();
    store.onEvent(ev("job_state", { state: "running" }, running()));
    store.onEvent(ev("phase_started", { phase: "plan" }, { phase: "plan", role: "programmer",
      ...running({ phase: "plan", role: "programmer" }) }));
    store.onEvent(ev("usage", { prompt_tokens: 1200, completion_tokens: 300, cost: 0.002 },
      running({ phase: "plan", role: "programmer", tokens: 1500, cost: 0.002 })));
    store.onEvent(ev("usage", { prompt_tokens: 100, completion_tokens: 0, cost: 0.001 },
      running({ phase: "plan", role: "programmer", tokens: 1600, cost: 0.003 })));
    store.onEvent(ev("usage", { prompt_tokens: 999, completion_tokens: 0, cost: 1 })); // no progress: nothing counted
    const job = store.get("j1")!;
    assert.equal(job.state, "running");
    assert.equal(job.phase, "plan");
    assert.equal(job.role, "programmer");
    assert.equal(job.tokens, 1600);
    assert.ok(Math.abs(job.cost - 0.003) < 1e-12);
    assert.equal(job.workspace, "/ws");
    assert.deepEqual(store.active().map((j) => j.id), ["j1"]);
  });

  it("titles a job it only sees through events (a save's review) with the daemon's title, never its id", () => {
    const store = new JobStore();
    store.onEvent(ev("job_state", { state: "queued", title: "review on save: calc.py" }, { job_id: "s1" }));
    store.onEvent(ev("change_proposed", { change_id: "c9", files: ["calc.py"], diff: "",
      tests_failed: "Tests FAILED: 1 failed" }, { job_id: "s1" }));
    const job = store.get("s1")!;
    assert.equal(job.title, "review on save: calc.py");
    assert.equal(jobTitle({ kind: "review", id: "s1", title: "review on save: x.py" }), "review on save: x.py");
    const change = job.entries.find((e) => e.kind === "change");
    assert.ok(change && change.kind === "change" && change.testsFailed === "Tests FAILED: 1 failed");
  });

  it("keeps the question the daemon says is pending until it is answered", () => {
    const store = new JobStore();
    const asked = { question: { question_id: "q1", text: "Keep the old API?" } };
    store.onEvent(ev("question", { question_id: "q1", text: "Keep the old API?", to: "human" },
      { role: "programmer", ...running(asked) }));
    store.onEvent(ev("question", { question_id: "q0", text: "Which file?", to: "instructor" }, running(asked)));
    assert.deepEqual(store.pendingQuestions(), [{ jobId: "j1", questionId: "q1", text: "Keep the old API?" }]);
    store.onEvent(ev("answer", { question_id: "q1", text: "Yes.", by: "human" }, running()));
    assert.deepEqual(store.pendingQuestions(), []);
    const question = store.get("j1")!.entries.find((e) => e.id === "q:q1");
    assert.deepEqual(question, { id: "q:q1", kind: "question", jobId: "j1", questionId: "q1", text: "Keep the old API?",
      to: "human", role: "programmer", answer: "Yes.", answeredBy: "human" });
  });

  it("shows a question once whether it comes as an event, a notification, or both", () => {
    const store = new JobStore();
    store.onQuestion({ jobId: "j1", questionId: "q1", text: "Keep it?" });
    store.onEvent(ev("question", { question_id: "q1", text: "Keep it?", to: "human" }));
    assert.equal(store.get("j1")!.entries.filter((e) => e.kind === "question").length, 1);
    store.answered("j1", "q1", "no");
    assert.deepEqual(store.pendingQuestions(), []);
    assert.equal((store.get("j1")!.entries[0] as { answer?: string }).answer, "no");
  });

  it("lists proposed changes until they are applied or discarded", () => {
    const store = new JobStore();
    store.onChangeProposed({ jobId: "j1", changeId: "c1", files: ["calc.py"], diff: "-a\n+b" });
    store.onEvent(ev("change_proposed", { change_id: "c1", files: ["calc.py"], diff: "-a\n+b" }));
    store.onChangeProposed({ jobId: "j2", changeId: "c2", files: ["x.py"], diff: "" });
    assert.deepEqual(store.pendingChanges().map((c) => c.changeId), ["c2", "c1"]);
    store.markChange("c1", "applied", "saved 1 file");
    store.markChange("c2", "discarded");
    assert.deepEqual(store.pendingChanges(), []);
    const entry = store.get("j1")!.entries.find((e) => e.kind === "change");
    assert.deepEqual(entry, { id: "c:c1", kind: "change", changeId: "c1", files: ["calc.py"], diff: "-a\n+b",
      state: "applied", note: "saved 1 file" });
  });

  it("takes title, progress, answer and error from the daemon's description of a job", () => {
    const store = new JobStore();
    store.onEvent(ev("usage", { prompt_tokens: 10, completion_tokens: 5, cost: 0.5 }, running({ tokens: 15, cost: 0.5 })));
    store.onJob(info({ id: "j1", kind: "ask", state: "succeeded", title: "ask: Why is add() wrong?",
      result: { answer: "It subtracts." }, progress: { state: "succeeded", tokens: 120, cost: 0.25 } }));
    const job = store.get("j1")!;
    assert.equal(job.title, "ask: Why is add() wrong?");
    assert.equal(job.tokens, 120);
    assert.equal(job.cost, 0.5); // never lowered: the events saw more than the description
    assert.equal(job.finished, true);
    assert.deepEqual(job.entries.at(-1), { id: "result", kind: "result", text: "It subtracts." });
    store.onJob(info({ id: "j2", kind: "test", state: "failed", error: "pytest not found" }));
    assert.deepEqual(store.get("j2")!.entries, [{ id: "error", kind: "state", state: "failed", error: "pytest not found" }]);
  });

  it("keeps a title the user gave", () => {
    const store = new JobStore();
    store.started("j1", "change", "change: fix add");
    store.onJob(info({ id: "j1", kind: "change", state: "running", title: "change: fix add() please" }));
    assert.equal(store.get("j1")!.title, "change: fix add");
  });

  it("notifies listeners with the entry that changed", () => {
    const store = new JobStore();
    const seen: [string, string | undefined][] = [];
    store.onDidChange((jobId, entry) => seen.push([jobId, entry?.kind]));
    store.onEvent(ev("usage", { prompt_tokens: 1 }, running({ tokens: 1 })));
    store.onEvent(ev("message", { text: "hi" }, { role: "reviewer" }));
    assert.deepEqual(seen, [["j1", undefined], ["j1", "message"]]);
  });

  it("ignores the watcher's notices, which belong to no job", () => {
    const store = new JobStore();
    store.onEvent({ kind: "watch", data: { action: "queued" }, job_id: null });  // no progress either
    assert.deepEqual(store.all(), []);
  });

  it("forgets the oldest finished jobs beyond the limit, never an active one", () => {
    const store = new JobStore();
    store.onEvent(ev("job_state", { state: "running" }, { job_id: "active", ...running() }));
    for (let i = 0; i < MAX_JOBS + 5; i++) {
      store.onEvent(ev("job_state", { state: "succeeded" }, { job_id: `done${i}`, progress: { state: "succeeded" } }));
    }
    assert.equal(store.all().length, MAX_JOBS);
    assert.ok(store.get("active"));
    assert.equal(store.get("done0"), undefined);
    assert.equal(store.current()?.id, "active");
  });
});

describe("the conversation", () => {
  it("turns events into entries by role and phase", () => {
    const entries: TroupeView.Entry[] = [];
    const add = (e: StreamEvent) => { const entry = entryFor(e, "j1", entries); if (entry) entries.push(entry); };
    add({ kind: "job_state", data: { state: "running" }, seq: 1 });
    add({ kind: "job_state", data: { state: "running" }, seq: 2 });
    add({ kind: "phase_started", data: { phase: "review", cycle: 2 }, seq: 3 });
    add({ kind: "message", data: { text: "Looks wrong", to: "programmer" }, role: "reviewer", phase: "review", seq: 4 });
    add({ kind: "tool_run", data: { tool: "pytest", ok: false, summary: "1 failed" }, seq: 5 });
    add({ kind: "finding", data: { id: 7, file: "calc.py", start_line: 5, severity: "major", message: "subtracts" }, seq: 6 });
    add({ kind: "log", data: { level: "debug", text: "noise" }, seq: 7 });
    add({ kind: "log", data: { level: "warning", text: "prompt is large" }, seq: 8 });
    add({ kind: "code_state", data: { index: 1 }, seq: 9 });
    add({ kind: "job_state", data: { state: "failed", error: "budget exceeded" }, seq: 10 });
    assert.deepEqual(entries, [
      { id: "s:1", kind: "state", state: "running" },
      { id: "p:3", kind: "phase", phase: "review", cycle: 2 },
      { id: "m:4", kind: "message", role: "reviewer", text: "Looks wrong", phase: "review", to: "programmer" },
      { id: "t:5", kind: "tool", tool: "pytest", ok: false, summary: "1 failed" },
      { id: "f:7", kind: "finding", file: "calc.py", line: 5, severity: "major", message: "subtracts" },
      { id: "l:8", kind: "log", level: "warning", text: "prompt is large" },
      { id: "s:10", kind: "state", state: "failed", error: "budget exceeded" },
    ]);
  });

  it("shows an answer to an unknown question as a message from whoever answered", () => {
    assert.deepEqual(entryFor({ kind: "answer", data: { question_id: "zz", text: "Yes", by: "instructor" }, seq: 3 },
      "j1", []), { id: "a:3", kind: "message", role: "instructor", text: "Yes" });
  });

  it("titles a job with the daemon's title, else its kind and id", () => {
    assert.equal(jobTitle({ id: "1", kind: "ask", title: "ask: why?" }), "ask: why?");
    assert.equal(jobTitle({ id: "1", kind: "test", title: " " }), "test 1");
  });
});

describe("errors", () => {
  it("are said once when the engine logged them before the job failed", () => {
    const store = new JobStore();
    store.onEvent({ kind: "log", data: { level: "error", text: "phase 'code' failed" }, job_id: "j", seq: 1 });
    store.onEvent({ kind: "job_state", data: { state: "failed", error: "phase 'code' failed" }, job_id: "j", seq: 2 });
    store.onJob(info({ id: "j", kind: "change", state: "failed", error: "phase 'code' failed" }));
    const texts = store.get("j")!.entries.map((e) => JSON.stringify(e));
    assert.equal(texts.filter((t) => t.includes("phase 'code' failed")).length, 1, texts.join("\n"));
  });
});
