// How a speaker looks: a colour and initials, the same everywhere on the page.

const KNOWN = {
  ceo: "#b45309", cto: "#7c3aed", programmer: "#2563eb", reviewer: "#db2777",
  tester: "#059669", human: "#0f766e", designer: "#ea580c", "code reviewer": "#db2777",
};

export function roleColour(role) {
  const name = String(role || "system").toLowerCase();
  if (KNOWN[name]) return KNOWN[name];
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return `hsl(${hash % 360} 55% 42%)`;
}

export function initials(role) {
  const name = String(role || "·").trim();
  if (name.toLowerCase() === "human") return "You";
  if (name.toLowerCase() === "team") return "?";  // the daemon asks on the team's behalf
  const words = name.split(/[\s_-]+/).filter(Boolean);
  if (words.length > 1) return (words[0][0] + words[1][0]).toUpperCase();
  return name.length <= 3 ? name.toUpperCase() : name.slice(0, 2).toUpperCase();
}

export function roleLabel(role) {
  const name = String(role || "system");
  if (name.toLowerCase() === "human") return "you";
  return name.length <= 3 ? name.toUpperCase() : name;
}
