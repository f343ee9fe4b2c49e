import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { ServerManager, type ServerState, findTroupe, serverSpec } from "../common/server";
import { DEFAULTS } from "../common/settings";
import { FakeLog, fakeFactory, rpcError } from "./fakes";

let tmp: string;

function executable(...parts: string[]): string {
  const file = path.join(tmp, ...parts);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  return file;
}

describe("finding troupe", () => {
  before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), "troupe-ext-")); });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("prefers the setting, then the workspace's .venv, then PATH", () => {
    const onPath = executable("bin", "troupe");
    const venv = executable("ws", ".venv", "bin", "troupe");
    const configured = executable("opt", "troupe");
    const env = { PATH: path.join(tmp, "bin") };
    const folders = [path.join(tmp, "ws")];
    assert.deepEqual(findTroupe({ configured, folders, env, platform: "linux" }), { command: configured, from: "setting" });
    assert.deepEqual(findTroupe({ configured: "", folders, env, platform: "linux" }), { command: venv, from: "venv" });
    assert.deepEqual(findTroupe({ configured: "", folders: [path.join(tmp, "other")], env, platform: "linux" }),
      { command: onPath, from: "PATH" });
  });

  it("looks in every workspace folder's .venv", () => {
    const second = executable("ws2", ".venv", "bin", "troupe");
    const found = findTroupe({ configured: "", folders: [path.join(tmp, "none"), path.join(tmp, "ws2")],
      env: { PATH: "" }, platform: "linux" });
    assert.deepEqual(found, { command: second, from: "venv" });
  });

  it("resolves a relative setting against the first workspace folder, and a bare name on PATH", () => {
    const rel = executable("ws3", "tools", "troupe");
    executable("bin2", "my-troupe");
    assert.deepEqual(findTroupe({ configured: "tools/troupe", folders: [path.join(tmp, "ws3")], env: {},
      platform: "linux" }), { command: rel, from: "setting" });
    assert.deepEqual(findTroupe({ configured: "${workspaceFolder}/tools/troupe", folders: [path.join(tmp, "ws3")],
      env: {}, platform: "linux" }), { command: rel, from: "setting" });
    assert.deepEqual(findTroupe({ configured: "my-troupe", folders: [], env: { PATH: path.join(tmp, "bin2") },
      platform: "linux" }), { command: path.join(tmp, "bin2", "my-troupe"), from: "setting" });
  });

  it("says what is wrong when the setting points at nothing, or at a file that is not executable", () => {
    const missing = findTroupe({ configured: "/nowhere/troupe", folders: [], env: {}, platform: "linux" });
    assert.deepEqual(missing, { error: 'troupe.path is "/nowhere/troupe", but /nowhere/troupe is not an executable file' });
    const plain = path.join(tmp, "plain");
    fs.writeFileSync(plain, "not a program", { mode: 0o644 });
    assert.match(JSON.stringify(findTroupe({ configured: plain, folders: [], env: {}, platform: "linux" })),
      /is not an executable file/);
    const notOnPath = findTroupe({ configured: "nosuch", folders: [], env: { PATH: "" }, platform: "linux" });
    assert.deepEqual(notOnPath, { error: 'troupe.path is "nosuch", but there is no such command on PATH' });
  });

  it("tells how to install Troupe when it is nowhere", () => {
    const found = findTroupe({ configured: "", folders: [path.join(tmp, "empty")], env: { PATH: "" }, platform: "linux" });
    assert.ok("error" in found);
    assert.match((found as { error: string }).error, /cannot find `troupe`: set troupe.path, or install Troupe in the workspace's .venv/);
  });
});

describe("the server process", () => {
  it("runs `troupe lsp` in the first folder and tells it the model, not through TROUPE_MODEL", () => {
    const spec = serverSpec("/v/bin/troupe", { ...DEFAULTS, model: "openai/fake" }, ["/ws", "/ws2"],
      { PATH: "/usr/bin", HOME: "/root", GONE: undefined });
    assert.equal(spec.command, "/v/bin/troupe");
    assert.deepEqual(spec.args, ["lsp"]);
    assert.equal(spec.cwd, "/ws");
    assert.equal(spec.env["TROUPE_MODEL"], undefined);  // it would win over later changes of troupe.model
    assert.equal(spec.env["PATH"], "/usr/bin");
    assert.equal("GONE" in spec.env, false);
    assert.deepEqual(spec.initializationOptions, { questions: "notification", changes: "notification",
      model: "openai/fake", reviewOnSave: true, testOnSave: false, minimumSeverity: "info" });
    assert.equal(serverSpec("t", DEFAULTS, [], {}).env["TROUPE_MODEL"], undefined);
  });
});

describe("ServerManager", () => {
  let dir: string;
  let troupe: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "troupe-mgr-"));
    troupe = path.join(dir, "troupe");
    fs.writeFileSync(troupe, "#!/bin/sh\n", { mode: 0o755 });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function manager() {
    const fake = fakeFactory();
    const log = new FakeLog();
    const states: ServerState[] = [];
    const m = new ServerManager({ factory: fake.factory, folders: () => [dir], log, env: { PATH: "" } });
    m.onStateChange((s) => states.push(s));
    return { m, fake, log, states, settings: { ...DEFAULTS, path: troupe } };
  }

  it("starts the server and reports starting, then running", async () => {
    const { m, fake, states, settings } = manager();
    await m.start(settings);
    assert.equal(fake.made.length, 1);
    assert.equal(fake.made[0]!.started, 1);
    assert.deepEqual(states.map((s) => s.kind), ["starting", "running"]);
    assert.equal(m.state.kind, "running");
  });

  it("fails with the reason, and makes no process, when troupe cannot be found", async () => {
    const { m, fake, log, settings } = manager();
    await m.start({ ...settings, path: "/nowhere/troupe" });
    assert.equal(fake.made.length, 0);
    assert.equal(m.state.kind, "failed");
    assert.match(log.lines.join("\n"), /\/nowhere\/troupe is not an executable file/);
    await assert.rejects(m.executeCommand("troupe.ask", {}),
      /The Troupe language server is not running: troupe.path is "\/nowhere\/troupe"/);
  });

  it("reports a server that does not start", async () => {
    const { m, fake, settings } = manager();
    fake.prepare((c) => { c.startError = new Error("exited with code 2"); });
    await m.start(settings);
    assert.equal(m.state.kind, "failed");
    assert.match((m.state as { reason: string }).reason, /troupe lsp did not start: exited with code 2/);
  });

  it("restarts the server when the path changes, keeping the notification handlers", async () => {
    const { m, fake, settings } = manager();
    const seen: unknown[] = [];
    m.onNotification("troupe/status", (p) => seen.push(p));
    await m.start(settings);
    const other = path.join(dir, "troupe2");
    fs.writeFileSync(other, "#!/bin/sh\n", { mode: 0o755 });
    await m.applySettings({ ...settings, path: other });
    assert.equal(fake.made.length, 2);
    assert.equal(fake.made[0]!.stopped, 1);
    assert.equal(fake.made[1]!.spec?.command, other);
    fake.made[0]!.emit("troupe/status", { old: true }); // the old connection is gone
    fake.made[1]!.emit("troupe/status", { daemon: "connected" });
    assert.deepEqual(seen, [{ daemon: "connected" }]);
  });

  it("sends other changes to the running server instead of restarting it", async () => {
    const { m, fake, settings } = manager();
    await m.start(settings);
    await m.applySettings({ ...settings, minimumSeverity: "major", testOnSave: true });
    await m.applySettings({ ...settings, minimumSeverity: "major", testOnSave: true }); // nothing changed: nothing sent
    assert.equal(fake.made.length, 1);
    assert.deepEqual(fake.made[0]!.notifications, [{ method: "workspace/didChangeConfiguration", params: {
      settings: { troupe: { questions: "notification", changes: "notification", model: null, reviewOnSave: true,
        testOnSave: true, minimumSeverity: "major" } } } }]);
    assert.equal(m.minimumSeverity, "major");
    assert.equal(fake.made[0]!.options?.minimumSeverity(), "major");
  });

  it("tries again on any settings change after a failed start", async () => {
    const { m, fake, settings } = manager();
    await m.start({ ...settings, path: "/nowhere" });
    await m.applySettings({ ...settings, path: troupe });
    assert.equal(fake.made.length, 1);
    assert.equal(m.state.kind, "running");
  });

  it("passes commands and requests through, and the server's errors back", async () => {
    const { m, fake, settings } = manager();
    fake.prepare((c) => {
      c.answers.set("troupe.review", { jobId: "j1" });
      c.answers.set("troupe/jobs", rpcError(-32001, "Troupe: cannot reach the Troupe daemon"));
    });
    await m.start(settings);
    assert.deepEqual(await m.executeCommand("troupe.review", { file: "file:///a.py" }), { jobId: "j1" });
    await assert.rejects(m.request("troupe/jobs", {}), /cannot reach the Troupe daemon/);
  });

  it("notices when the server stops by itself", async () => {
    const { m, fake, settings } = manager();
    await m.start(settings);
    fake.made[0]!.crash();
    assert.deepEqual(m.state, { kind: "failed", reason: "the language server stopped" });
    await m.restart();
    assert.equal(m.state.kind, "running");
    assert.equal(fake.made.length, 2);
  });

  it("serialises overlapping starts and restarts", async () => {
    const { m, fake, settings } = manager();
    await Promise.all([m.start(settings), m.restart(settings), m.restart(settings)]);
    assert.equal(fake.made.length, 3);
    assert.deepEqual(fake.made.map((c) => [c.started, c.stopped]), [[1, 1], [1, 1], [1, 0]]);
  });
});
