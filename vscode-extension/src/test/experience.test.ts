import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { renderResults, searchExperience } from "../common/experience";
import { rpcError } from "./fakes";

describe("experience", () => {
  it("asks the language server, and passes its errors on", async () => {
    const asked: [string, object][] = [];
    const results = await searchExperience("off by one", { request: async <T>(method: string, params: object) => {
      asked.push([method, params]);
      return { query: "off by one", hits: [{ kind: "k", text: "t" }] } as T;
    } });
    assert.deepEqual(asked, [["troupe/experience", { query: "off by one", limit: 20 }]]);
    assert.deepEqual(results, { query: "off by one", hits: [{ kind: "k", text: "t" }] });
    await assert.rejects(searchExperience("x", { request: async () => { throw rpcError(-32001, "daemon down"); } }),
      /daemon down/);
  });

  it("refuses answers that are not hits", async () => {
    await assert.rejects(searchExperience("x", { request: async () => ({ nope: 1 }) as never }), /not a list of hits/);
  });

  it("renders hits as Markdown", () => {
    assert.equal(renderResults({ query: "q", hits: [{ kind: "shortcut", text: " use a + b \n" }] }),
      "# Troupe experience: q\n\n## 1. shortcut\n\nuse a + b\n");
  });
});
