/**
 * Messages from the webview, checked before anything acts on them: the webview renders text
 * from a language model, so the extension trusts nothing it posts back.
 */

export const MAX_TEXT = 100_000;
const ID = /^[A-Za-z0-9._:-]{1,128}$/;

function id(value: unknown): string | undefined {
  return typeof value === "string" && ID.test(value) ? value : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() && value.length <= MAX_TEXT ? value : undefined;
}

/** The message, or undefined when it is not one the chat view sends. */
export function parseFromWebview(raw: unknown): TroupeView.FromWebview | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const m = raw as Record<string, unknown>;
  switch (m["type"]) {
    case "ready":
      return { type: "ready" };
    case "select": {
      const jobId = id(m["jobId"]);
      return jobId ? { type: "select", jobId } : undefined;
    }
    case "cancel":
    case "openViewer": {
      const jobId = id(m["jobId"]);
      return jobId ? { type: m["type"], jobId } : undefined;
    }
    case "apply":
    case "discard": {
      const changeId = id(m["changeId"]);
      return changeId ? { type: m["type"], changeId } : undefined;
    }
    case "answer": {
      const jobId = id(m["jobId"]);
      const answer = text(m["text"]);
      const questionId = m["questionId"] === "" ? "" : id(m["questionId"]);
      return jobId && answer && questionId !== undefined ? { type: "answer", jobId, questionId, text: answer } : undefined;
    }
    case "ask": {
      const prompt = text(m["prompt"]);
      const mode = m["mode"] === "change" ? "change" : m["mode"] === "ask" ? "ask" : undefined;
      return prompt && mode ? { type: "ask", prompt, mode } : undefined;
    }
    default:
      return undefined;
  }
}
