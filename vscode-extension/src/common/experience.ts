/**
 * "Troupe: Open Experience": search what the team has learnt and show it as a document.
 *
 * Asks the language server (`troupe/experience`, which asks the daemon); the answer is the
 * daemon's SearchResults.
 */

import type { Team } from "./commands";
import { Requests, type SearchResults } from "./protocol";

export type { SearchResults };

function checked(value: unknown, query: string): SearchResults {
  const hits = typeof value === "object" && value !== null && Array.isArray((value as { hits?: unknown }).hits)
    ? (value as SearchResults).hits : undefined;
  if (!hits) throw new Error("the experience search answered something that is not a list of hits");
  return { query, hits: hits.filter((h) => typeof h === "object" && h !== null && typeof h.text === "string") };
}

export async function searchExperience(query: string, deps: Pick<Team, "request"> & { limit?: number }):
    Promise<SearchResults> {
  return checked(await deps.request(Requests.experience, { query, limit: deps.limit ?? 20 }), query);
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
