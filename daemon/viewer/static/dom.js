// Building DOM safely. Text goes in with textContent, never innerHTML: model output, file
// contents and chat text are untrusted, and this is the only way any of it reaches the page.

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(node, props, children) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.setAttribute("class", value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") Object.assign(node.style, value);  // CSSOM: allowed by the CSP
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** h("div", {class: "x", text: "hi"}, child, ...) — an HTML element. */
export function h(tag, props = {}, ...children) {
  return fill(document.createElement(tag), props, children);
}

/** s("rect", {x: 1}) — an SVG element. */
export function s(tag, props = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), props, children);
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export const $ = (selector, root = document) => root.querySelector(selector);

const numbers = new Intl.NumberFormat("en-US");
export const fmtInt = (n) => numbers.format(Math.round(n || 0));
export const fmtCost = (x) => "$" + (x || 0).toFixed(x >= 1 ? 2 : 4);
export const fmtSeconds = (s) => (s >= 60 ? `${Math.floor(s / 60)}m ${Math.round(s % 60)}s` : `${(s || 0).toFixed(1)}s`);

/** A job's time in the list: the clock today, the date before that. */
export function fmtWhen(at) {
  if (!at) return "";
  const when = new Date(at * 1000);
  if (when.toDateString() === new Date().toDateString()) return fmtClock(at);
  return when.toLocaleDateString("en-GB", { day: "numeric", month: "short" }) + " " + fmtClock(at).slice(0, 5);
}

export function fmtClock(at) {
  if (!at) return "";
  return new Date(at * 1000).toLocaleTimeString("en-GB", { hour12: false });
}
