/** The manifest agrees with the code: commands, settings, chat participant, engines. */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { PARTICIPANT_ID } from "../chat/participant";
import { Ids } from "../common/commands";
import { CLIENT_ID, DEFAULTS } from "../common/settings";

const ROOT = path.resolve(__dirname, "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8"));

describe("package.json", () => {
  it("declares exactly the commands the extension registers, all titled 'Troupe: …' and none bound to a key", () => {
    const declared = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(declared, Object.values(Ids).sort());
    for (const c of manifest.contributes.commands) assert.equal(c.category, "Troupe");
    assert.equal(manifest.contributes.keybindings, undefined);
  });

  it("declares the settings the extension reads, with the same defaults", () => {
    const props = manifest.contributes.configuration.properties;
    for (const [key, value] of Object.entries(DEFAULTS)) assert.equal(props[`troupe.${key}`].default, value, key);
    assert.deepEqual(props["troupe.minimumSeverity"].enum, ["critical", "major", "minor", "info"]);
    assert.ok(props[`${CLIENT_ID}.trace.server`], "the language client reads <id>.trace.server");
  });

  it("declares the @troupe participant the code registers", () => {
    assert.deepEqual(manifest.contributes.chatParticipants.map((p: { id: string; name: string }) => [p.id, p.name]),
      [[PARTICIPANT_ID, "troupe"]]);
  });

  it("installs in VS Code 1.91 and later, code-server's 1.100 included, with types no newer than that", () => {
    assert.equal(manifest.engines.vscode, "^1.91.0");
    assert.equal(manifest.devDependencies["@types/vscode"], "1.91.0");
  });

  it("pins every dependency exactly, and the lockfile names no registry but npm's", () => {
    for (const deps of [manifest.dependencies, manifest.devDependencies]) {
      for (const [name, version] of Object.entries(deps)) assert.match(String(version), /^\d+\.\d+\.\d+$/, name);
    }
    for (const [name, entry] of Object.entries(lock.packages as Record<string, { resolved?: string }>)) {
      if (entry.resolved) assert.match(entry.resolved, /^https:\/\/registry\.npmjs\.org\//, name);
    }
  });
});
