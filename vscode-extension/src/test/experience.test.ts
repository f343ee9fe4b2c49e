import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";

import { cliRunner, renderResults, searchExperience } from "../common/experience";
import { rpcError } from "./fakes";

function script(body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "troupe-cli-"));
  const file = path.join(dir, "troupe");
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

describe("experience", () => {
  it("runs the troupe CLI and returns its output", async () => {
    const troupe = script('printf \'{"query": "%s", "hits": [{"kind": "k", "text": "t"}]}\' "$7"');
    const run = cliRunner(() => troupe);
    const results = await searchExperience("off by one", { request: async () => { throw rpcError(-32601, "no"); }, run });
    assert.deepEqual(results, { query: "off by one", hits: [{ kind: "k", text: "t" }] });
  });

  it("reports the CLI's own error line", async () => {
    const troupe = script('echo "troupe: cannot reach the daemon" >&2; exit 3');
    await assert.rejects(cliRunner(() => troupe)(["experience", "search", "x"]),
      /troupe experience failed: troupe: cannot reach the daemon/);
    await assert.rejects(cliRunner(() => undefined)(["x"]), /`troupe` was not found/);
  });

  it("passes other server errors on, and refuses answers that are not hits", async () => {
    const run = async () => "not json";
    await assert.rejects(searchExperience("x", { request: async () => { throw rpcError(-32001, "daemon down"); }, run }),
      /daemon down/);
    await assert.rejects(searchExperience("x", { request: async () => { throw rpcError(-32601, "no"); }, run }),
      /did not answer JSON/);
    await assert.rejects(searchExperience("x", { request: async () => ({ nope: 1 }) as never, run }),
      /not a list of hits/);
  });

  it("renders hits as Markdown", () => {
    assert.equal(renderResults({ query: "q", hits: [{ kind: "shortcut", text: " use a + b \n" }] }),
      "# Troupe experience: q\n\n## 1. shortcut\n\nuse a + b\n");
  });
});
