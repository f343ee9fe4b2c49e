import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Ids, TroupeCommands } from "../common/commands";
import type { DiagnosticInfo } from "../common/host";
import { JobStore } from "../common/jobs";
import { FakeConnection, FakeHost, FakeLog, pickLabel, rpcError } from "./fakes";

const FILE = "file:///ws/calc.py";

function setup() {
  const host = new FakeHost();
  host.folders = ["/ws"];
  const server = new FakeConnection();
  const store = new JobStore();
  const log = new FakeLog();
  const shownChat: (string | undefined)[] = [];
  let restarts = 0;
  const commands = new TroupeCommands({
    host, store, log,
    team: { executeCommand: (c, a) => server.executeCommand(c, a), request: (m, p) => server.request(m, p),
      restart: async () => { restarts++; } },
    chat: { show: (jobId) => shownChat.push(jobId), visible: false },
  });
  commands.register();
  return { host, server, store, log, commands, shownChat, restarts: () => restarts };
}

function editor(extra: Partial<NonNullable<FakeHost["editor"]>> = {}): NonNullable<FakeHost["editor"]> {
  return { uri: FILE, fsPath: "/ws/calc.py", isDirty: false, selectedText: "", cursorLine: 4, ...extra };
}

const finding = (id: number, line: number, message = `finding ${id}`): DiagnosticInfo => ({
  message, severity: "error", source: "troupe", data: { findingId: id },
  range: { start: { line, character: 4 }, end: { line, character: 16 } },
});

describe("commands", () => {
  it("registers every command, none of them one of the server's own ids", () => {
    const { host } = setup();
    assert.deepEqual([...host.commands.keys()].sort(), Object.values(Ids).sort());
    for (const id of host.commands.keys()) {
      assert.ok(!["troupe.ask", "troupe.review", "troupe.test", "troupe.cancel", "troupe.answer", "troupe.dismiss",
        "troupe.applyChange", "troupe.discardChange", "troupe.explain", "troupe.fixApplied", "troupe.openViewer"]
        .includes(id), id);
    }
  });

  it("Ask the Team sends the prompt with the file and the selection, and opens the chat on the job", async () => {
    const { host, server, store, shownChat } = setup();
    const selection = { start: { line: 4, character: 0 }, end: { line: 4, character: 16 } };
    host.editor = editor({ selection, selectedText: "    return a - b" });
    host.inputAnswers.push("  Why does add() subtract?  ");
    host.pickAnswers.push(pickLabel("Propose a change"));
    server.answers.set("troupe.ask", { jobId: "j1" });
    assert.deepEqual(await host.run(Ids.askTeam), { jobId: "j1" });
    assert.equal(host.inputs[0]!.prompt, "Ask the team about the selected code");
    assert.deepEqual(server.commands, [{ command: "troupe.ask", argument: { prompt: "Why does add() subtract?",
      mode: "change", file: FILE, selection } }]);
    assert.equal(store.get("j1")!.title, "change: Why does add() subtract?");
    assert.deepEqual(shownChat, ["j1"]);
  });

  it("Ask the Team offers the last kind of answer first", async () => {
    const { host, server } = setup();
    server.answers.set("troupe.ask", { jobId: "j1" });
    host.inputAnswers.push("first", "second");
    host.pickAnswers.push(pickLabel("Propose a change"), (items) => items[0]);
    await host.run(Ids.askTeam);
    await host.run(Ids.askTeam);
    assert.match(host.picks[1]!.items[0]!.label, /Propose a change/);
    assert.equal((server.commands[1]!.argument as { mode: string }).mode, "change");
  });

  it("Ask the Team leaves out a file outside the workspace, and does nothing when cancelled", async () => {
    const { host, server } = setup();
    host.editor = editor({ uri: "file:///tmp/x.py", fsPath: "/tmp/x.py" });
    server.answers.set("troupe.ask", { jobId: "j2" });
    await host.run(Ids.askTeam, { prompt: "hello", mode: "ask" });
    assert.deepEqual(server.commands[0]!.argument, { prompt: "hello", mode: "ask" });
    host.inputAnswers.push(undefined);
    assert.equal(await host.run(Ids.askTeam), undefined);
    host.inputAnswers.push("question");
    host.pickAnswers.push(() => undefined);
    assert.equal(await host.run(Ids.askTeam), undefined);
    assert.equal(server.commands.length, 1);
  });

  it("shows the server's error to the user, once, without doubling the prefix", async () => {
    const { host, server, log } = setup();
    server.answers.set("troupe.ask", rpcError(-32803, "Troupe: /tmp/x.py is not inside a workspace folder"));
    await host.run(Ids.askTeam, { prompt: "p", mode: "ask" });
    assert.deepEqual(host.errors(), ["Troupe: /tmp/x.py is not inside a workspace folder"]);
    assert.match(log.lines.at(-1)!, /^error: troupe.askTeam: Troupe: \/tmp\/x.py/);
    server.answers.set("troupe.ask", new Error("connection got disposed"));
    await host.run(Ids.askTeam, { prompt: "p", mode: "ask" });
    assert.equal(host.errors()[1], "Troupe: connection got disposed");
  });

  it("Review This File reviews the active file, and says that unsaved edits are not reviewed", async () => {
    const { host, server, store } = setup();
    host.editor = editor({ isDirty: true });
    server.answers.set("troupe.review", { jobId: "r1" });
    await host.run(Ids.reviewFile);
    assert.deepEqual(server.commands, [{ command: "troupe.review", argument: { file: FILE } }]);
    assert.equal(store.get("r1")!.title, "review calc.py");
    assert.match(host.messages[0]!.message, /reviews the file as saved/);
  });

  it("Review This File needs a file on disk", async () => {
    const { host, server } = setup();
    host.editor = editor({ uri: "untitled:Untitled-1" });
    delete host.editor.fsPath;
    await host.run(Ids.reviewFile);
    assert.equal(server.commands.length, 0);
    assert.match(host.messages[0]!.message, /open a file from a workspace folder to review it/);
  });

  it("Run Tests focuses on the active file of the workspace, else runs them all", async () => {
    const { host, server } = setup();
    server.answers.set("troupe.test", { jobId: "t1" });
    host.editor = editor();
    await host.run(Ids.runTests);
    host.editor = undefined;
    await host.run(Ids.runTests);
    assert.deepEqual(server.commands.map((c) => c.argument), [{ file: FILE }, {}]);
    host.folders = [];
    await host.run(Ids.runTests);
    assert.equal(server.commands.length, 2);
    assert.match(host.messages.at(-1)!.message, /open one first/);
  });

  it("Show Jobs lists the daemon's jobs and opens the one picked in the chat", async () => {
    const { host, server, shownChat } = setup();
    server.answers.set("troupe/jobs", { jobs: [
      { id: "j1", kind: "ask", state: "succeeded", title: "ask: Why?", usage: { prompt_tokens: 1000,
        completion_tokens: 500, cost: 0.0123 }, progress: { state: "succeeded", tokens: 1500, cost: 0.0123 } },
      { id: "j2", kind: "review", state: "running", workspace: "/ws", title: "review: calc.py",
        progress: { state: "running" } },
    ] });
    host.pickAnswers.push(pickLabel("review: calc.py"));
    await host.run(Ids.showJobs);
    assert.deepEqual(server.requests, [{ method: "troupe/jobs", params: { limit: 50 } }]);
    const items = host.picks[0]!.items;
    assert.deepEqual(items.map((i) => [i.label, i.description, i.detail]), [
      ["$(check) ask: Why?", "succeeded · 1.5k tokens · $0.01", "job j1"],
      ["$(sync~spin) review: calc.py", "running · 0 tokens · $0", "job j2 · /ws"],
    ]);
    assert.deepEqual(shownChat, ["j2"]);
  });

  it("Show Jobs says so when there is none", async () => {
    const { host, server } = setup();
    server.answers.set("troupe/jobs", { jobs: [] });
    await host.run(Ids.showJobs);
    assert.match(host.messages[0]!.message, /no jobs yet/);
  });

  it("Cancel Job picks among the running jobs and cancels that one", async () => {
    const { host, server } = setup();
    server.answers.set("troupe/jobs", { jobs: [{ id: "j1", kind: "ask", state: "running", request: { prompt: "x" } }] });
    server.answers.set("troupe.cancel", (a: { jobId: string }) => ({ jobId: a.jobId, state: "cancelled" }));
    host.pickAnswers.push((items) => items[0]);
    await host.run(Ids.cancelJob);
    assert.deepEqual(server.requests[0], { method: "troupe/jobs", params: { state: "active", limit: 50 } });
    assert.deepEqual(server.commands, [{ command: "troupe.cancel", argument: { jobId: "j1" } }]);
    assert.equal(host.messages.at(-1)!.message, "Troupe: job j1 is cancelled.");
    await host.run(Ids.cancelJob, { jobId: "j7" });
    assert.deepEqual(server.commands[1], { command: "troupe.cancel", argument: { jobId: "j7" } });
  });

  it("Cancel Job says so when nothing runs", async () => {
    const { host, server } = setup();
    server.answers.set("troupe/jobs", { jobs: [{ id: "j1", kind: "ask", state: "succeeded" }] });
    await host.run(Ids.cancelJob);
    assert.equal(host.messages[0]!.message, "No Troupe job is running.");
    assert.equal(server.commands.length, 0);
  });

  it("Answer the Team's Question answers the one waiting question, also one asked before this window started", async () => {
    const { host, server, store } = setup();
    const question = { question_id: "q1", text: "Keep the old name?" };
    server.answers.set("troupe/jobs", { jobs: [{ id: "j1", kind: "change", state: "waiting_for_answer", question,
      progress: { state: "waiting_for_answer", question } }] });
    host.inputAnswers.push(" Yes, keep it. ");
    assert.equal(await host.run(Ids.answerQuestion), true);
    assert.equal(host.inputs[0]!.prompt, "Keep the old name?");
    assert.deepEqual(server.commands, [{ command: "troupe.answer",
      argument: { jobId: "j1", text: "Yes, keep it.", questionId: "q1" } }]);
    assert.deepEqual(store.pendingQuestions(), []);
  });

  it("Answer the Team's Question asks which question when several wait, and says when none does", async () => {
    const { host, server, store } = setup();
    server.answers.set("troupe/jobs", { jobs: [] });
    assert.equal(await host.run(Ids.answerQuestion), false);
    assert.equal(host.messages[0]!.message, "The team has no question for you right now.");
    store.onQuestion({ jobId: "j1", questionId: "q1", text: "First?" });
    store.onQuestion({ jobId: "j2", questionId: "q2", text: "Second?" });
    host.pickAnswers.push(pickLabel("First?"));
    host.inputAnswers.push("yes");
    await host.run(Ids.answerQuestion);
    assert.deepEqual(server.commands.at(-1)!.argument, { jobId: "j1", text: "yes", questionId: "q1" });
  });

  it("Dismiss Finding dismisses the finding on the cursor's line, with the reason given", async () => {
    const { host, server } = setup();
    host.editor = editor({ cursorLine: 4 });
    host.diagnosticsByUri.set(FILE, [finding(7, 4), finding(8, 9), { ...finding(9, 4), source: "ruff" }]);
    host.inputAnswers.push("intended: it must subtract");
    server.answers.set("troupe.dismiss", { findingId: 7, state: "dismissed" });
    assert.equal(await host.run(Ids.dismissFinding), true);
    assert.equal(host.picks.length, 0);
    assert.deepEqual(server.commands, [{ command: "troupe.dismiss",
      argument: { findingId: 7, reason: "intended: it must subtract" } }]);
  });

  it("Dismiss Finding lets the user pick when the cursor is on none, and Escape dismisses nothing", async () => {
    const { host, server } = setup();
    host.editor = editor({ cursorLine: 0 });
    host.diagnosticsByUri.set(FILE, [finding(7, 4, "add() subtracts"), finding(8, 9)]);
    host.pickAnswers.push(pickLabel("add() subtracts"));
    host.inputAnswers.push("");
    await host.run(Ids.dismissFinding);
    assert.deepEqual(host.picks[0]!.items.map((i) => i.description), ["line 5 · error", "line 10 · error"]);
    assert.deepEqual(server.commands[0]!.argument, { findingId: 7 });
    host.pickAnswers.push(pickLabel("finding 8"));
    host.inputAnswers.push(undefined);
    assert.equal(await host.run(Ids.dismissFinding), false);
    assert.equal(server.commands.length, 1);
  });

  it("Dismiss Finding says so when the file has no Troupe finding, and takes an id from a code action", async () => {
    const { host, server } = setup();
    host.editor = editor();
    await host.run(Ids.dismissFinding);
    assert.match(host.messages[0]!.message, /no Troupe finding to dismiss/);
    await host.run(Ids.dismissFinding, { findingId: 3 });
    assert.deepEqual(server.commands, [{ command: "troupe.dismiss", argument: { findingId: 3 } }]);
  });

  it("Apply saves the files the change edited, not files the user was still editing", async () => {
    const { host, server, store } = setup();
    store.onChangeProposed({ jobId: "j1", changeId: "c1", files: ["calc.py"], diff: "+x" });
    host.dirty.add("file:///ws/notes.py");
    server.answers.set("troupe.applyChange", () => {
      host.dirty.add(FILE); // the editor applied the workspace edit
      return { changeId: "c1", applied: true };
    });
    assert.equal(await host.run(Ids.applyProposedChange), true);
    assert.deepEqual(server.commands, [{ command: "troupe.applyChange", argument: { changeId: "c1" } }]);
    assert.deepEqual(host.saved, [[FILE]]);
    assert.deepEqual(store.pendingChanges(), []);
    const entry = store.get("j1")!.entries[0]!;
    assert.deepEqual(entry.kind === "change" && [entry.state, entry.note], ["applied", "applied; saved 1 file"]);
  });

  it("Apply keeps the change proposed, with the reason, when the server refuses", async () => {
    const { host, server, store } = setup();
    store.onChangeProposed({ jobId: "j1", changeId: "c1", files: ["calc.py"], diff: "+x" });
    server.answers.set("troupe.applyChange", rpcError(-32803, "Troupe: change c1 was already applied"));
    assert.equal(await host.run(Ids.applyProposedChange, { changeId: "c1" }), undefined);
    assert.deepEqual(host.errors(), ["Troupe: change c1 was already applied"]);
    const entry = store.get("j1")!.entries[0]!;
    assert.deepEqual(entry.kind === "change" && [entry.state, entry.note],
      ["proposed", "Troupe: change c1 was already applied"]);
  });

  it("Discard discards the picked change; with none waiting it says so", async () => {
    const { host, server, store } = setup();
    await host.run(Ids.discardProposedChange);
    assert.match(host.messages[0]!.message, /no proposed change waiting/);
    store.onChangeProposed({ jobId: "j1", changeId: "c1", files: ["a.py"], diff: "" });
    store.onChangeProposed({ jobId: "j2", changeId: "c2", files: ["b.py"], diff: "" });
    host.pickAnswers.push(pickLabel("b.py"));
    await host.run(Ids.discardProposedChange);
    assert.deepEqual(server.commands, [{ command: "troupe.discardChange", argument: { changeId: "c2" } }]);
    assert.deepEqual(store.pendingChanges().map((c) => c.changeId), ["c1"]);
  });

  it("Open Experience searches through the language server and shows the hits as a document", async () => {
    const { host, server } = setup();
    server.answers.set("troupe/experience", { query: "sub", hits: [{ kind: "finding", text: "add() subtracted",
      job_id: "j1", file: "calc.py" }] });
    host.inputAnswers.push("sub");
    await host.run(Ids.openExperience);
    assert.deepEqual(server.requests.at(-1), { method: "troupe/experience", params: { query: "sub", limit: 20 } });
    assert.deepEqual(host.documents[0], { language: "markdown", content:
      "# Troupe experience: sub\n\n## 1. finding (job j1, calc.py)\n\nadd() subtracted\n" });
    server.answers.set("troupe/experience", { query: "-n 5", hits: [] });
    await host.run(Ids.openExperience, "-n 5");
    assert.match(host.documents[1]!.content, /Nothing the team has learnt matches/);
  });

  it("the status menu offers what is waiting, and runs the choice", async () => {
    const { host, store, restarts } = setup();
    store.onQuestion({ jobId: "j1", questionId: "q1", text: "?" });
    host.pickAnswers.push(pickLabel("Restart"));
    await host.run(Ids.statusMenu);
    const labels = host.picks[0]!.items.map((i) => i.label);
    assert.ok(labels.includes("$(report) Answer the Team's Question"));
    assert.ok(!labels.some((l) => l.includes("Apply")));
    assert.equal(restarts(), 1);
  });
});
