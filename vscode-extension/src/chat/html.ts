/**
 * The chat view's HTML shell: a strict Content-Security-Policy, one script allowed by its
 * nonce, the stylesheet from the extension's folder, and nothing interpolated unescaped.
 * The conversation itself is built by the webview script with `textContent` only.
 */

import { randomBytes } from "node:crypto";

export function makeNonce(): string {
  return randomBytes(18).toString("base64url");
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

export interface ShellOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
  title: string;
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "form-action 'none'",
    "base-uri 'none'",
  ].join("; ");
}

export function chatHtml(options: ShellOptions): string {
  const e = escapeHtml;
  if (!/^[A-Za-z0-9+/_-]+=*$/.test(options.nonce)) throw new Error("the nonce must be base64");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${e(contentSecurityPolicy(options.cspSource, options.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${e(options.styleUri)}">
<title>${e(options.title)}</title>
</head>
<body>
<header>
  <label for="job" class="visually-hidden">Job</label>
  <select id="job" title="The job this view follows"></select>
  <span id="usage" class="muted"></span>
  <button id="cancel" type="button" class="secondary" hidden>Cancel job</button>
  <span id="connection" class="warning" hidden>Daemon unreachable</span>
</header>
<main id="log" aria-live="polite">
  <p id="empty" class="muted">No job yet. Ask the team below, or run "Troupe: Review This File".</p>
</main>
<footer>
  <form id="ask">
    <label for="prompt" class="visually-hidden">Ask the team</label>
    <textarea id="prompt" rows="2" placeholder="Ask the team… (Ctrl+Enter sends)"></textarea>
    <select id="mode" title="What the team should do">
      <option value="ask">Answer</option>
      <option value="change">Propose a change</option>
    </select>
    <button type="submit">Send</button>
  </form>
</footer>
<script nonce="${e(options.nonce)}" src="${e(options.scriptUri)}"></script>
</body>
</html>
`;
}
