import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  DEFAULTS,
  changed,
  configurationChange,
  initializationOptions,
  needsRestart,
  readSettings,
} from "../common/settings";

const host = (settings: Record<string, unknown>) => ({ setting: (key: string) => settings[key] });

describe("settings", () => {
  it("reads the defaults when nothing is set", () => {
    assert.deepEqual(readSettings(host({})), { settings: DEFAULTS, problems: [] });
  });

  it("reads every setting the user set, trimming paths", () => {
    const { settings, problems } = readSettings(host({ path: "  ~/bin/troupe ", model: "openai/gpt-4o-mini",
      reviewOnSave: false, testOnSave: true, minimumSeverity: "major" }));
    assert.deepEqual(settings, { path: "~/bin/troupe", model: "openai/gpt-4o-mini", reviewOnSave: false,
      testOnSave: true, minimumSeverity: "major" });
    assert.deepEqual(problems, []);
  });

  it("ignores a value of the wrong type and says which setting and why", () => {
    const { settings, problems } = readSettings(host({ path: 3, reviewOnSave: "yes", minimumSeverity: "high" }));
    assert.equal(settings.path, "");
    assert.equal(settings.reviewOnSave, true);
    assert.equal(settings.minimumSeverity, "info");
    assert.equal(problems.length, 3);
    assert.match(problems[0]!, /troupe.path must be a string, got 3/);
    assert.match(problems[1]!, /troupe.reviewOnSave must be true or false, got "yes"/);
    assert.match(problems[2]!, /troupe.minimumSeverity must be one of critical, major, minor, info, got "high"/);
  });

  it("tells the server to leave questions and changes to the extension, and passes the settings", () => {
    const options = initializationOptions({ ...DEFAULTS, model: "ollama/qwen", minimumSeverity: "minor" });
    assert.deepEqual(options, { questions: "notification", changes: "notification", model: "ollama/qwen",
      reviewOnSave: true, testOnSave: false, minimumSeverity: "minor" });
    assert.equal(initializationOptions(DEFAULTS).model, null);
    assert.deepEqual(configurationChange(DEFAULTS), { settings: { troupe: initializationOptions(DEFAULTS) } });
  });

  it("restarts the server only when the path changes", () => {
    assert.equal(needsRestart(DEFAULTS, { ...DEFAULTS, path: "/opt/troupe" }), true);
    assert.equal(needsRestart(DEFAULTS, { ...DEFAULTS, model: "x", testOnSave: true }), false);
    assert.equal(changed(DEFAULTS, { ...DEFAULTS }), false);
    assert.equal(changed(DEFAULTS, { ...DEFAULTS, minimumSeverity: "critical" }), true);
  });
});
