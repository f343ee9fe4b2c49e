import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { type ChatStream, type ParticipantDeps, fenced, handleChatRequest, quoted } from "../chat/participant";
import { JobStore } from "../common/jobs";
import { tick } from "./fakes";

class Stream implements ChatStream {
  parts: string[] = [];
  progress(text: string): void { this.parts.push(`progress: ${text}`); }
  markdown(text: string): void { this.parts.push(`md: ${text}`); }
  button(c: { command: string; title: string; arguments?: unknown[] }): void {
    this.parts.push(`button: ${c.title} ${c.command} ${JSON.stringify(c.arguments)}`);
  }
}

function token() {
  const listeners: (() => void)[] = [];
  const t = { isCancellationRequested: false, onCancellationRequested: (l: () => void) => {
    listeners.push(l); return { dispose: () => undefined }; } };
  return { t, cancel: () => { t.isCancellationRequested = true; listeners.forEach((l) => l()); } };
}

function deps(store: JobStore, calls: string[]): ParticipantDeps {
  return {
    store,
    ask: async (p, m) => { calls.push(`${m}: ${p}`); return { jobId: "j1" }; },
    review: async () => { calls.push("review"); return { jobId: "j1" }; },
    test: async () => { calls.push("test"); return undefined; },
    cancel: async (j) => calls.push(`cancel ${j}`),
  };
}

describe("the @troupe chat participant", () => {
  it("streams the job: phases as progress, the question and diff with buttons, then the answer", async () => {
    const store = new JobStore();
    const calls: string[] = [];
    const stream = new Stream();
    const done = handleChatRequest({ prompt: "fix add()", command: "change" }, stream, token().t, deps(store, calls));
    await tick();
    store.onEvent({ kind: "phase_started", data: {}, phase: "code", job_id: "j1", seq: 1,
      progress: { state: "running", phase: "code" } });
    store.onQuestion({ jobId: "j1", questionId: "q1", text: "Keep <old> name?" });
    store.onChangeProposed({ jobId: "j1", changeId: "c1", files: ["calc.py"], diff: "-a - b\n+a + b\n" });
    store.onEvent({ kind: "job_state", data: { state: "succeeded" }, job_id: "j1", seq: 2,
      progress: { state: "succeeded", phase: "code" } });
    store.onJob({ id: "j1", kind: "change", state: "succeeded", priority: 20, result: { answer: "Fixed." } });
    assert.deepEqual(await done, { metadata: { jobId: "j1" } });
    assert.deepEqual(calls, ["change: fix add()"]);
    assert.deepEqual(stream.parts, [
      "progress: The team is on it…",
      "progress: code",
      "md: **The team asks:** Keep &lt;old&gt; name?\n\n",
      'button: Answer… troupe.answerQuestion [{"jobId":"j1","questionId":"q1","question":"Keep <old> name?"}]',
      "md: **Proposed change** to `calc.py`:\n\n",
      "md: ```diff\n-a - b\n+a + b\n```\n",
      'button: Apply troupe.applyProposedChange [{"changeId":"c1"}]',
      'button: Discard troupe.discardProposedChange [{"changeId":"c1"}]',
      "md: \nFixed.\n",
    ]);
  });

  it("cancels the job when the user stops the request", async () => {
    const store = new JobStore();
    const calls: string[] = [];
    const { t, cancel } = token();
    const done = handleChatRequest({ prompt: "", command: "review" }, new Stream(), t, deps(store, calls));
    await tick();
    cancel();
    await done;
    assert.deepEqual(calls, ["review", "cancel j1"]);
  });

  it("explains itself when asked nothing, and says when the job did not start", async () => {
    const store = new JobStore();
    const stream = new Stream();
    await handleChatRequest({ prompt: "  " }, stream, token().t, deps(store, []));
    assert.match(stream.parts[0]!, /Ask the team something/);
    const second = new Stream();
    await handleChatRequest({ prompt: "", command: "test" }, second, token().t, deps(store, []));
    assert.match(second.parts[0]!, /did not start/);
  });

  it("ends a little after the final state when the job's description never comes (daemon lost)", async () => {
    const store = new JobStore();
    const stream = new Stream();
    const done = handleChatRequest({ prompt: "why?" }, stream, token().t, { ...deps(store, []), graceMs: 20 });
    await tick();
    store.onEvent({ kind: "job_state", data: { state: "failed", error: "lost" }, job_id: "j1", seq: 1,
      progress: { state: "failed" } });
    assert.deepEqual(await done, { metadata: { jobId: "j1" } });
    assert.equal(stream.parts.at(-1), "md: \n*The job failed: lost.*\n");
  });

  it("fences text with more backticks than it contains, and escapes HTML", () => {
    assert.equal(fenced("a ``` b", "diff"), "````diff\na ``` b\n````\n");
    assert.equal(quoted("<script>&"), "&lt;script&gt;&amp;");
  });
});
