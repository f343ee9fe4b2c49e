/** The run viewer: "Troupe: Open Run Viewer", the chat view's "Open in viewer", the links from the server. */
import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { ChatPanel } from "../chat/panel";
import { Ids, TroupeCommands } from "../common/commands";
import { JobStore } from "../common/jobs";
import { asJobFinished, routeNotifications } from "../common/notifications";
import type { JobInfo } from "../common/protocol";
import { VIEWER_LINK_TTL_MS, asViewerAnswer, asViewerUrl, externalUrl, openViewer } from "../common/viewer";
import { FakeConnection, FakeHost, FakeLog, type FakePanel, pickLabel, rpcError, tick } from "./fakes";

const LINK = "http://127.0.0.1:41234/viewer/jobs/j1?token=0a1b2c";
const FRESH = "http://127.0.0.1:41234/viewer/jobs/j1?token=ffee00";
const LIST = "http://127.0.0.1:41234/viewer/?token=123abc";
const finished = (id: string, extra: Record<string, unknown> = {}): { job: JobInfo; [key: string]: unknown } =>
  ({ job: { id, kind: "ask", state: "succeeded", priority: 20, title: `ask: about ${id}` }, ...extra });

function setup(shownJob?: string) {
  const host = new FakeHost();
  const server = new FakeConnection();
  const store = new JobStore();
  const log = new FakeLog();
  const commands = new TroupeCommands({
    host, store, log,
    team: { executeCommand: (c, a) => server.executeCommand(c, a), request: (m, p) => server.request(m, p),
      restart: async () => undefined },
    chat: { show: () => undefined, visible: shownJob !== undefined, shownJob },
  });
  commands.register();
  routeNotifications(server, { store, log, status: () => undefined, question: () => undefined,
    changeProposed: () => undefined });
  return { host, server, store, log, commands };
}

describe("run viewer links", () => {
  it("are only http(s) URLs", () => {
    assert.equal(asViewerUrl(LINK), LINK);
    assert.equal(asViewerUrl("https://troupe.example/viewer/"), "https://troupe.example/viewer/");
    for (const bad of ["javascript:alert(1)", "file:///etc/passwd", "command:workbench.action.terminal.new",
      "vscode://x", "data:text/html,x", "/viewer/", "", 5, null, `http://h/${"x".repeat(5000)}`]) {
      assert.equal(asViewerUrl(bad), undefined, String(bad).slice(0, 40));
    }
    assert.deepEqual(asViewerAnswer({ url: LINK, opened: false }), { url: LINK, opened: false });
    assert.deepEqual(asViewerAnswer({ url: LINK, opened: true }), { url: LINK, opened: true });
    assert.deepEqual(asViewerAnswer({ url: LINK }), { url: LINK, opened: false });
    assert.equal(asViewerAnswer({ url: "file:///x", opened: false }), undefined);
    assert.equal(asViewerAnswer(null), undefined);
  });

  it("come with troupe/jobFinished; a bad one is left out, the job kept", () => {
    assert.deepEqual(asJobFinished(finished("j1", { viewerUrl: LINK })),
      { job: finished("j1").job, viewerUrl: LINK });
    assert.deepEqual(asJobFinished(finished("j1", { viewerUrl: "javascript:alert(1)" })), { job: finished("j1").job });
    assert.deepEqual(asJobFinished(finished("j1")), { job: finished("j1").job });
    assert.equal(asJobFinished({ viewerUrl: LINK }), undefined);
  });
});

describe("the job store's viewer links", () => {
  it("add 'Open in viewer' to a finished job, without the link, and hand the link out once while fresh", () => {
    const { server, store } = setup();
    server.emit("troupe/jobFinished", finished("j1", { viewerUrl: LINK }));
    server.emit("troupe/jobFinished", finished("j2", { viewerUrl: "javascript:alert(1)" }));
    server.emit("troupe/jobFinished", finished("j3"));
    assert.deepEqual(store.get("j1")!.entries.at(-1), { id: "viewer", kind: "viewer", jobId: "j1" });
    assert.ok(!JSON.stringify(store.get("j1")!.entries).includes("token"), "the login code stays out of the view");
    assert.ok(!store.get("j2")!.entries.some((e) => e.kind === "viewer"));
    assert.ok(!store.get("j3")!.entries.some((e) => e.kind === "viewer"));
    assert.equal(store.takeViewerLink("j1"), LINK);
    assert.equal(store.takeViewerLink("j1"), undefined, "a link works once");
    assert.equal(store.takeViewerLink("j3"), undefined);
    assert.equal(store.takeViewerLink("nope"), undefined);
  });

  it("drop a link that is too old, and keep the button when troupe/jobs describes the job again", () => {
    const store = new JobStore();
    store.onJob(finished("j1").job, LINK, 1_000);
    assert.equal(store.takeViewerLink("j1", 1_000 + VIEWER_LINK_TTL_MS + 1), undefined);
    store.onJob(finished("j1").job, FRESH, 2_000);
    store.onJob(finished("j1").job); // troupe/jobs: no link
    assert.equal(store.get("j1")!.entries.filter((e) => e.kind === "viewer").length, 1);
    assert.equal(store.takeViewerLink("j1", 2_000 + VIEWER_LINK_TTL_MS), FRESH);
  });

  it("need a finished job", () => {
    const store = new JobStore();
    store.onJob({ id: "j1", kind: "ask", state: "running", priority: 20 }, LINK);
    assert.ok(!store.get("j1")!.entries.some((e) => e.kind === "viewer"));
    assert.equal(store.takeViewerLink("j1"), undefined);
  });
});

describe("opening the run viewer through the server", () => {
  const deps = (server: FakeConnection, host: FakeHost) => ({ host, team: server, log: new FakeLog() });

  it("leaves it to the server when it opened the link itself", async () => {
    const host = new FakeHost();
    const server = new FakeConnection();
    server.answers.set("troupe.openViewer", { url: LINK, opened: true });
    assert.equal(await openViewer(deps(server, host), "j1"), true);
    assert.deepEqual(server.commands, [{ command: "troupe.openViewer", argument: { jobId: "j1", open: false } }]);
    assert.deepEqual(host.external, []);
  });

  it("opens the URL in the browser when the server answered opened: false", async () => {
    const host = new FakeHost();
    const server = new FakeConnection();
    server.answers.set("troupe.openViewer", { url: LIST, opened: false });
    assert.equal(await openViewer(deps(server, host)), true);
    assert.deepEqual(server.commands, [{ command: "troupe.openViewer", argument: { open: false } }]);
    assert.deepEqual(host.external, [LIST]);
    host.externalAnswer = false;
    assert.equal(await openViewer(deps(server, host)), false);
  });

  it("opens the link under the address asExternalUri gives the daemon's port, path and login kept", async () => {
    const host = new FakeHost();
    host.proxy = "https://cs.example:8443";  // code-server: /proxy/<port>/, the path and the query dropped
    const server = new FakeConnection();
    server.answers.set("troupe.openViewer", { url: LINK, opened: false });
    assert.equal(await openViewer(deps(server, host), "j1"), true);
    assert.deepEqual(host.external, ["https://cs.example:8443/proxy/41234/viewer/jobs/j1?token=0a1b2c"]);
    assert.equal(await externalUrl(new FakeHost(), LINK), LINK);  // a desktop VS Code: unchanged
  });

  it("never opens anything but an http(s) URL, and explains an old server", async () => {
    const host = new FakeHost();
    const server = new FakeConnection();
    server.answers.set("troupe.openViewer", { url: "command:workbench.action.terminal.new", opened: false });
    await assert.rejects(openViewer(deps(server, host)), /without a link/);
    server.answers.set("troupe.openViewer", rpcError(-32602, "Command name 'troupe.openViewer' is not defined"));
    await assert.rejects(openViewer(deps(server, host)), /no run viewer .*update troupe/);
    server.answers.set("troupe.openViewer", rpcError(-32803, "the daemon serves no run viewer (TROUPE_TCP_PORT=off)"));
    await assert.rejects(openViewer(deps(server, host)), /TROUPE_TCP_PORT=off/);
    assert.deepEqual(host.external, []);
  });
});

describe("Troupe: Open Run Viewer", () => {
  it("opens the job list straight away when this window knows no job", async () => {
    const { host, server } = setup();
    server.answers.set("troupe.openViewer", { url: LIST, opened: false });
    assert.equal(await host.run(Ids.openRunViewer), true);
    assert.deepEqual(host.picks, []);
    assert.deepEqual(server.commands, [{ command: "troupe.openViewer", argument: { open: false } }]);
    assert.deepEqual(host.external, [LIST]);
  });

  it("offers the current job first, then the job list, then the others", async () => {
    const { host, server, store } = setup();
    store.onJob(finished("j1").job);
    store.started("j2", "review", "review calc.py");
    server.answers.set("troupe.openViewer", { url: LINK, opened: true });
    host.pickAnswers.push((items) => items[0], pickLabel("All jobs"), () => undefined);
    await host.run(Ids.openRunViewer);
    assert.deepEqual(host.picks[0]!.items.map((i) => [i.label, i.description]), [
      ["$(clock) review calc.py", "the current job"],
      ["$(list-unordered) All jobs", "the run viewer's job list"],
      ["$(check) ask: about j1", "succeeded"],
    ]);
    await host.run(Ids.openRunViewer);
    assert.equal(await host.run(Ids.openRunViewer), false, "Escape opens nothing");
    assert.deepEqual(server.commands.map((c) => c.argument), [{ jobId: "j2", open: false }, { open: false }]);
    assert.deepEqual(host.external, []);
  });

  it("puts the job the chat shows first, and takes a job from its argument", async () => {
    const { host, server, store } = setup("j1");
    store.onJob(finished("j1").job);
    store.started("j2", "review", "review calc.py");
    server.answers.set("troupe.openViewer", { url: LINK, opened: true });
    host.pickAnswers.push((items) => items[0]);
    await host.run(Ids.openRunViewer);
    assert.equal(host.picks[0]!.items[0]!.description, "the job in the chat");
    await host.run(Ids.openRunViewer, { jobId: "abc123" });
    await host.run(Ids.openRunViewer, {});
    assert.deepEqual(server.commands.map((c) => c.argument), [{ jobId: "j1", open: false }, { jobId: "abc123", open: false }, { open: false }]);
    assert.equal(host.picks.length, 1);
  });

  it("shows the server's error", async () => {
    const { host, server } = setup();
    server.answers.set("troupe.openViewer", rpcError(-32803, "Troupe: the run viewer is off (TROUPE_TCP_PORT=off)"));
    assert.equal(await host.run(Ids.openRunViewer, {}), undefined);
    assert.deepEqual(host.errors(), ["Troupe: the run viewer is off (TROUPE_TCP_PORT=off)"]);
  });

  it("is in the status menu", async () => {
    const { host, server } = setup();
    server.answers.set("troupe.openViewer", { url: LIST, opened: false });
    host.pickAnswers.push(pickLabel("Open Run Viewer"));
    await host.run(Ids.statusMenu);
    assert.deepEqual(host.external, [LIST]);
  });
});

describe("the chat view's 'Open in viewer'", () => {
  function chatSetup() {
    const s = setup();
    const chat = new ChatPanel(s.host, s.store, s.commands.chatActions());
    chat.show();
    const webview = (s.host.panels[0] as FakePanel).webview;
    webview.send({ type: "ready" });
    return { ...s, chat, webview };
  }

  it("appears when the job finished with a link, and the webview never gets the link", async () => {
    const { server, store, webview } = chatSetup();
    store.started("j1", "ask", "ask: about j1"); // the chat follows it
    server.emit("troupe/jobFinished", finished("j1", { viewerUrl: LINK }));
    assert.ok(webview.posted.some((m) => m.type === "entry" && m.entry.kind === "viewer" && m.entry.jobId === "j1"));
    assert.ok(!JSON.stringify(webview.posted).includes("token="));
  });

  it("opens the job's link from troupe/jobFinished in the browser once, then asks the server for a fresh one", async () => {
    const { host, server, webview } = chatSetup();
    server.emit("troupe/jobFinished", finished("j1", { viewerUrl: LINK }));
    server.answers.set("troupe.openViewer", { url: FRESH, opened: false });
    webview.send({ type: "openViewer", jobId: "j1" });
    await tick();
    assert.deepEqual(host.external, [LINK]);
    assert.deepEqual(server.commands, []);
    webview.send({ type: "openViewer", jobId: "j1" });
    await tick();
    assert.deepEqual(server.commands, [{ command: "troupe.openViewer", argument: { jobId: "j1", open: false } }]);
    assert.deepEqual(host.external, [LINK, FRESH]);
  });

  it("shows an error when the server cannot make a link", async () => {
    const { host, server, webview } = chatSetup();
    server.answers.set("troupe.openViewer", rpcError(-32001, "Troupe: the daemon is unreachable"));
    webview.send({ type: "openViewer", jobId: "j9" });
    await tick();
    await tick();
    assert.deepEqual(host.errors(), ["Troupe: the daemon is unreachable"]);
    assert.deepEqual(host.external, []);
  });
});
