/**
 * "Troupe: Open Experience": search what the team has learnt and show it as a document.
 *
 * Asks the language server (`troupe/experience`); a server that does not serve that request
 * answers "method not found", and then `troupe experience search --json` answers instead
 * (the same daemon API, through the CLI).
 */

import { execFile } from "node:child_process";

import { ErrorCodes, Requests, type SearchHit } from "./protocol";
import { errorCode } from "./connection";

export interface SearchResults {
  query: string;
  hits: SearchHit[];
}

export type RunTroupe = (args: string[]) => Promise<string>;

/** Runs `command args…` and resolves with its stdout; rejects with its stderr's last line. */
export function cliRunner(command: () => string | undefined, timeoutMs = 30_000): RunTroupe {
  return (args) => new Promise((resolve, reject) => {
    const troupe = command();
    if (!troupe) {
      reject(new Error("`troupe` was not found, so the experience cannot be searched"));
      return;
    }
    execFile(troupe, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        const last = String(stderr).trim().split(/\r?\n/).pop();
        reject(new Error(`troupe ${args[0] ?? ""} failed: ${last || error.message}`));
      } else {
        resolve(String(stdout));
      }
    });
  });
}

function parseResults(value: unknown, query: string): SearchResults {
  const hits = typeof value === "object" && value !== null && Array.isArray((value as { hits?: unknown }).hits)
    ? (value as { hits: unknown[] }).hits : undefined;
  if (!hits) throw new Error("the experience search answered something that is not a list of hits");
  return {
    query,
    hits: hits.filter((h): h is SearchHit => typeof h === "object" && h !== null &&
      typeof (h as SearchHit).text === "string"),
  };
}

export async function searchExperience(query: string, deps: {
  request: <T>(method: string, params: object) => Promise<T>;
  run: RunTroupe;
  limit?: number;
}): Promise<SearchResults> {
  const limit = deps.limit ?? 20;
  try {
    return parseResults(await deps.request<unknown>(Requests.experience, { query, limit }), query);
  } catch (error) {
    if (errorCode(error) !== ErrorCodes.methodNotFound) throw error;
  }
  const out = await deps.run(["experience", "search", "--json", "-n", String(limit), "--", query]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(out);
  } catch {
    throw new Error(`troupe experience search did not answer JSON: ${out.slice(0, 200)}`);
  }
  return parseResults(parsed, query);
}

/** The results as a Markdown document. */
export function renderResults(results: SearchResults): string {
  const lines = [`# Troupe experience: ${results.query}`, ""];
  if (!results.hits.length) {
    lines.push("Nothing the team has learnt matches this search yet.");
    return lines.join("\n") + "\n";
  }
  results.hits.forEach((hit, index) => {
    const where = [hit.job_id ? `job ${hit.job_id}` : "", hit.file ?? ""].filter(Boolean).join(", ");
    lines.push(`## ${index + 1}. ${hit.kind}${where ? ` (${where})` : ""}`, "", hit.text.trim(), "");
  });
  return lines.join("\n");
}
