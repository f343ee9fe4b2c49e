import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { JobStore } from "../common/jobs";
import type { ServerStatus } from "../common/protocol";
import type { ServerState } from "../common/server";
import { MENU_COMMAND, StatusBar, StatusController, formatCost, formatTokens, statusView } from "../common/status";
import { FakeStatusItem } from "./fakes";

const running: ServerState = { kind: "running", command: "/v/troupe" };
const connected: ServerStatus = { daemon: "connected", reason: "connected", activeJobs: 0, workspaces: [],
  promptTokens: 0, completionTokens: 0, tokens: 0, cost: 0 };

describe("the status bar", () => {
  it("formats tokens and cost briefly", () => {
    assert.deepEqual([0, 999, 1234, 15_400, 2_345_678].map(formatTokens), ["0", "999", "1.2k", "15k", "2.3M"]);
    assert.deepEqual([0, 0.00346, 0.5, 12.346].map(formatCost), ["$0", "$0.0035", "$0.50", "$12.35"]);
  });

  it("says idle, with the session's tokens and cost in the tooltip", () => {
    const view = statusView({ server: running, status: { ...connected, tokens: 1500, cost: 0.02 }, activeJobs: 0 });
    assert.equal(view.text, "$(organization) Troupe");
    assert.match(view.tooltip, /idle\.\nThis session: 1\.5k tokens · \$0\.02\./);
    assert.equal(view.warning, false);
  });

  it("says working, with the phase, tokens and cost", () => {
    const view = statusView({ server: running, status: { ...connected, activeJobs: 1, tokens: 2048, cost: 0.004 },
      activeJob: { title: "change: fix add", phase: "code", role: "programmer", waiting: false }, activeJobs: 1 });
    assert.equal(view.text, "$(sync~spin) Troupe: code · 2.0k tokens · $0.0040");
    assert.match(view.tooltip, /1 job running; newest: change: fix add \(code · programmer\)/);
  });

  it("says when the team waits for the user", () => {
    const view = statusView({ server: running, status: { ...connected, activeJobs: 2 },
      activeJob: { title: "ask", waiting: true }, activeJobs: 1 });
    assert.match(view.text, /Troupe: waiting for you/);
    assert.match(view.tooltip, /2 jobs running/);
  });

  it("says the daemon is unreachable, with the reason, as a warning", () => {
    const view = statusView({ server: running, status: { ...connected, daemon: "unreachable", reason: "no socket" },
      activeJobs: 0 });
    assert.equal(view.text, "$(debug-disconnect) Troupe: daemon unreachable");
    assert.match(view.tooltip, /Cannot reach the Troupe daemon \(no socket\)/);
    assert.equal(view.warning, true);
  });

  it("says when the language server is not running, and while it starts", () => {
    const failed = statusView({ server: { kind: "failed", reason: "cannot find `troupe`" }, activeJobs: 0 });
    assert.equal(failed.text, "$(warning) Troupe: not running");
    assert.match(failed.tooltip, /cannot find `troupe`/);
    assert.equal(failed.warning, true);
    assert.match(statusView({ server: { kind: "starting", command: "t" }, activeJobs: 0 }).text, /starting/);
  });

  it("opens the Troupe menu when clicked, and follows the jobs and the server", () => {
    const item = new FakeStatusItem();
    const store = new JobStore();
    const server = { state: running as ServerState };
    const controller = new StatusController(new StatusBar(item), store, server);
    assert.equal(item.command, MENU_COMMAND);
    assert.equal(item.visible, true);
    controller.refresh();
    assert.equal(item.text, "$(organization) Troupe");
    store.onEvent({ kind: "job_state", data: { state: "running" }, job_id: "j", progress: { state: "running" } });
    store.onEvent({ kind: "phase_started", data: {}, phase: "test", job_id: "j",
      progress: { state: "running", phase: "test" } });
    controller.refresh(); // no troupe/status yet: the window's own count
    assert.equal(item.text, "$(sync~spin) Troupe: test");
    controller.setStatus({ ...connected, activeJobs: 1, tokens: 10, cost: 0 });
    assert.equal(item.text, "$(sync~spin) Troupe: test · 10 tokens · $0");
    server.state = { kind: "failed", reason: "the language server stopped" };
    controller.serverChanged();
    assert.equal(controller.status, undefined);
    assert.equal(item.text, "$(warning) Troupe: not running");
    assert.equal(item.warning, true);
  });
});

describe("the status bar while connecting", () => {
  it("says so", () => {
    const view = statusView({ server: running, status: { ...connected, daemon: "connecting" }, activeJobs: 0 });
    assert.equal(view.text, "$(loading~spin) Troupe: connecting");
  });
});
