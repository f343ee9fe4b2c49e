import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { chatHtml, contentSecurityPolicy, escapeHtml, makeNonce } from "../chat/html";
import { MAX_TEXT, parseFromWebview } from "../chat/messages";
import { type ChatActions, ChatPanel, SCRIPT, STYLE, VIEW_TYPE } from "../chat/panel";
import { JobStore } from "../common/jobs";
import { FakeHost, type FakePanel, tick } from "./fakes";

const ROOT = path.resolve(__dirname, "..", "..");

describe("the chat view's HTML", () => {
  it("escapes everything it interpolates", () => {
    assert.equal(escapeHtml(`<img src=x onerror="alert('x')">&`),
      "&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;");
    const html = chatHtml({ cspSource: "https://csp", nonce: "abc", scriptUri: "https://s/chat.js?a=1&b=2",
      styleUri: "https://s/chat.css", title: "</title><script>alert(1)</script>" });
    assert.ok(!html.includes("<script>alert(1)"));
    assert.ok(html.includes("&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.ok(html.includes('src="https://s/chat.js?a=1&amp;b=2"'));
  });

  it("allows only its own nonced script and the extension's stylesheet", () => {
    const nonce = makeNonce();
    assert.match(nonce, /^[A-Za-z0-9_-]{24}$/);
    assert.notEqual(nonce, makeNonce());
    const csp = contentSecurityPolicy("https://csp", nonce);
    assert.equal(csp, `default-src 'none'; img-src https://csp data:; style-src https://csp; font-src https://csp; ` +
      `script-src 'nonce-${nonce}'; form-action 'none'; base-uri 'none'`);
    assert.ok(!csp.includes("unsafe"));
    const html = chatHtml({ cspSource: "https://csp", nonce, scriptUri: "s.js", styleUri: "c.css", title: "T" });
    const scripts = html.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, [`<script nonce="${nonce}" src="s.js">`]);
    assert.ok(html.includes(`content="${csp.replace(/'/g, "&#39;")}"`));
    assert.throws(() => chatHtml({ cspSource: "x", nonce: "a\" onload=\"x", scriptUri: "", styleUri: "", title: "" }));
  });

  it("ships the script and stylesheet it loads; the script is a classic script that never uses innerHTML", () => {
    const script = fs.readFileSync(path.join(ROOT, SCRIPT), "utf8");
    assert.ok(fs.existsSync(path.join(ROOT, STYLE)));
    assert.ok(!/^\s*(import|export)\b/m.test(script), "the CSP loads it as a classic script");
    assert.ok(!/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/.test(script));
    assert.ok(!/location|window\.open|\.href\b|createElement\("a"\)/.test(script), "the webview never navigates");
    assert.match(script, /textContent/);
  });
});

describe("messages from the webview", () => {
  it("accepts what the chat view sends", () => {
    assert.deepEqual(parseFromWebview({ type: "ready" }), { type: "ready" });
    assert.deepEqual(parseFromWebview({ type: "apply", changeId: "c-1" }), { type: "apply", changeId: "c-1" });
    assert.deepEqual(parseFromWebview({ type: "answer", jobId: "j1", questionId: "", text: "yes" }),
      { type: "answer", jobId: "j1", questionId: "", text: "yes" });
    assert.deepEqual(parseFromWebview({ type: "ask", prompt: "why?", mode: "change", extra: 1 }),
      { type: "ask", prompt: "why?", mode: "change" });
  });

  it("drops anything else", () => {
    for (const bad of [null, "ready", [], { type: "eval" }, { type: "apply" }, { type: "apply", changeId: "../x" },
      { type: "select", jobId: "a b" }, { type: "answer", jobId: "j", questionId: "q", text: "  " },
      { type: "ask", prompt: "x", mode: "build" }, { type: "ask", prompt: "x".repeat(MAX_TEXT + 1), mode: "ask" },
      { type: "cancel", jobId: 5 }]) {
      assert.equal(parseFromWebview(bad), undefined, JSON.stringify(bad)?.slice(0, 80));
    }
  });
});

function setup() {
  const host = new FakeHost();
  const store = new JobStore();
  const calls: string[] = [];
  const actions: ChatActions = {
    ask: async (p, m) => calls.push(`ask ${m} ${p}`),
    answer: async (j, q, t) => calls.push(`answer ${j} ${q} ${t}`),
    apply: async (c) => calls.push(`apply ${c}`),
    discard: async (c) => calls.push(`discard ${c}`),
    cancel: async (j) => calls.push(`cancel ${j}`),
    openViewer: async (j) => calls.push(`viewer ${j}`),
  };
  const chat = new ChatPanel(host, store, actions);
  return { host, store, calls, chat };
}

describe("the chat panel", () => {
  it("opens a webview that may load only the extension's media and script", () => {
    const { host, chat } = setup();
    chat.show();
    const panel = host.panels[0]!;
    assert.equal(panel.viewType, VIEW_TYPE);
    assert.deepEqual(panel.folders, ["media", "out/webview"]);
    assert.ok(panel.webview.html.includes(`src="https://res.example/${SCRIPT}"`));
    assert.ok(panel.webview.html.includes(`href="https://res.example/${STYLE}"`));
  });

  it("sends the job's conversation once the webview is ready, then streams new entries", async () => {
    const { host, store, chat } = setup();
    store.started("j1", "ask", "ask: why?");
    store.onEvent({ kind: "phase_started", data: {}, phase: "answer", job_id: "j1", seq: 1 });
    chat.show("j1");
    const webview = (host.panels[0] as FakePanel).webview;
    assert.equal(webview.posted.length, 0); // not ready yet: nothing lost, nothing sent
    webview.send({ type: "ready" });
    await tick();
    const state = webview.posted[0]!;
    assert.equal(state.type, "state");
    assert.equal(state.type === "state" && state.selected, "j1");
    assert.deepEqual(state.type === "state" && state.entries, [{ id: "p:1", kind: "phase", phase: "answer" }]);
    assert.equal(host.panels[0]!.title, "Troupe: ask: why?");
    store.onEvent({ kind: "message", data: { text: "<b>hi</b>" }, role: "programmer", job_id: "j1", seq: 2 });
    store.onEvent({ kind: "message", data: { text: "other" }, job_id: "j2", seq: 1 });
    const entries = webview.posted.filter((m) => m.type === "entry");
    assert.deepEqual(entries, [{ type: "entry", jobId: "j1",
      entry: { id: "m:2", kind: "message", role: "programmer", text: "<b>hi</b>" } }]);
    assert.ok(webview.posted.some((m) => m.type === "jobs" && m.jobs.some((j) => j.id === "j2")));
  });

  it("relays the user's clicks to the actions, and ignores forged messages", async () => {
    const { host, calls, chat, store } = setup();
    chat.show();
    const webview = (host.panels[0] as FakePanel).webview;
    webview.send({ type: "ready" });
    webview.send({ type: "apply", changeId: "c1" });
    webview.send({ type: "discard", changeId: "c2" });
    webview.send({ type: "answer", jobId: "j1", questionId: "q1", text: "Yes" });
    webview.send({ type: "ask", prompt: "fix it", mode: "change" });
    webview.send({ type: "cancel", jobId: "j1" });
    webview.send({ type: "openViewer", jobId: "j1" });
    webview.send({ type: "openViewer", jobId: "j1", url: "https://evil.example/" });
    webview.send({ type: "openViewer", url: "https://evil.example/" });
    webview.send({ type: "apply", changeId: "c1; rm -rf" });
    webview.send({ type: "command", command: "workbench.action.terminal.new" });
    await tick();
    assert.deepEqual(calls, ["apply c1", "discard c2", "answer j1 q1 Yes", "ask change fix it", "cancel j1",
      "viewer j1", "viewer j1"]); // a URL the webview sends is never used: only the job id goes on
    store.started("j9", "ask", "t");
    webview.send({ type: "select", jobId: "j9" });
    await tick();
    assert.equal(host.panels[0]!.title, "Troupe: t");
  });

  it("follows the first job that appears while it is empty, and says when the daemon is unreachable", async () => {
    const { host, store, chat } = setup();
    chat.show();
    const webview = (host.panels[0] as FakePanel).webview;
    webview.send({ type: "ready" });
    store.onEvent({ kind: "job_state", data: { state: "running" }, job_id: "w1", seq: 1, progress: { state: "running" } });
    assert.equal(chat.isShowing("w1"), true);
    chat.setConnected(false);
    const last = webview.posted.at(-1)!;
    assert.equal(last.type === "jobs" && last.connected, false);
  });

  it("is opened again after the user closed it", () => {
    const { host, chat } = setup();
    chat.show();
    host.panels[0]!.dispose();
    assert.equal(chat.visible, false);
    chat.show();
    assert.equal(host.panels.length, 2);
    chat.show();
    assert.equal(host.panels[1]!.reveals, 1);
  });
});
