#!/usr/bin/env bash
# Copied from the shared tools (tools/vscode-e2e/code-server-offline.sh) so the repository can set up
# its own end-to-end test; keep the two in step.
# -----------------------------------------------------------------------------
# code-server-offline.sh — install code-server (the npm package) on a machine
# that can reach ONLY the npm registry (+ Debian apt), i.e. no GitHub, no
# nodejs.org, no open-vsx.
#
#   usage:  code-server-offline.sh DEST_DIR
#   result: DEST_DIR/node_modules/.bin/code-server
#
# Why the normal `npm install code-server` fails offline:
#   * code-server's postinstall.sh runs `npm install` inside lib/vscode; there
#     - @vscode/ripgrep's postinstall downloads `rg` from GitHub releases,
#     - kerberos tries prebuild-install (GitHub) before node-gyp,
#     - node-pty's postinstall runs `npx node-gyp configure -f compile_commands_json`
#       (fetches node-gyp; blocked by `yes=false`, and only needed by IDEs anyway),
#   * argon2 (top level) uses node-pre-gyp which first downloads from GitHub,
#   * node-gyp downloads Node headers from nodejs.org unless --nodedir is given.
# So: install everything with --ignore-scripts, then do by hand exactly what
# the install scripts would have done, using local resources only.
#
# Idempotent: re-running skips work that is already done (native modules that
# already load are not rebuilt unless FORCE_REBUILD=1).
#
# Env knobs:
#   CODE_SERVER_VERSION   (default 4.100.3; 4.x needs Node 20)
#   SKIP_APT=1            do not apt-get install build prerequisites
#   FORCE_REBUILD=1       rebuild native modules even if they load
#   E2E_TOOLS=0           skip step 7 (Debian chromium + playwright-core + @vscode/vsce)
#   npm_config_cache=...  (standard npm) use a separate npm cache
# -----------------------------------------------------------------------------
set -euo pipefail

DEST=${1:?usage: $0 DEST_DIR}
VERSION=${CODE_SERVER_VERSION:-4.100.3}
JOBS=$(nproc 2>/dev/null || echo 2)

t0=$SECONDS
log()  { printf '\n[%4ss] == %s\n' "$((SECONDS - t0))" "$*"; }
die()  { echo "ERROR: $*" >&2; exit 1; }

# --- 0. prerequisites --------------------------------------------------------
log "checking prerequisites"
command -v node >/dev/null || die "node not found"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
[ "$NODE_MAJOR" = 20 ] || die "code-server $VERSION needs Node 20, found $(node -v)"

# Debian packages: compiler toolchain, python for gyp, krb5 headers for the
# `kerberos` module, and ripgrep (replaces the GitHub-downloaded rg binary).
APT_PKGS="build-essential python3 pkg-config libkrb5-dev ripgrep"
if [ "${SKIP_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=""
  for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    log "apt-get install$missing"
    apt-get install -y --no-install-recommends $missing \
      || { apt-get update && apt-get install -y --no-install-recommends $missing; }
  fi
fi
command -v rg  >/dev/null || die "ripgrep (rg) not found; apt-get install ripgrep"
command -v make >/dev/null && command -v g++ >/dev/null || die "need make + g++ (build-essential)"

# Node headers: node-gyp would download them from nodejs.org. Use the headers
# shipped next to the node binary (NodeSource/official tarballs ship
# <prefix>/include/node). Override with npm_config_nodedir if elsewhere.
if [ -z "${npm_config_nodedir:-}" ]; then
  NODE_PREFIX=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
  [ -f "$NODE_PREFIX/include/node/node.h" ] \
    || die "no Node headers at $NODE_PREFIX/include/node; set npm_config_nodedir"
  export npm_config_nodedir=$NODE_PREFIX
fi
hdr_ver=$(sed -n 's/^#define NODE_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9]*\).*/\2/p' \
          "$npm_config_nodedir/include/node/node_version.h" | paste -sd.)
[ "v$hdr_ver" = "$(node -v)" ] || echo "WARNING: headers v$hdr_ver != node $(node -v)"

# Use npm's bundled node-gyp (no npx download). node-pre-gyp honours
# npm_config_node_gyp too.
NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
NODE_GYP="$NPM_DIR/node_modules/node-gyp/bin/node-gyp.js"
[ -f "$NODE_GYP" ] || die "npm's bundled node-gyp not found at $NODE_GYP"
export npm_config_node_gyp=$NODE_GYP
export npm_config_yes=false           # never let npx fetch things silently
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

gyp_rebuild() {   # $1 = package dir; build with node-gyp against local headers
  ( cd "$1" && node "$NODE_GYP" rebuild --jobs "$JOBS" --nodedir="$npm_config_nodedir" ) \
    > "$1/.offline-build.log" 2>&1 || { tail -30 "$1/.offline-build.log"; die "build failed: $1"; }
}
loads() {         # $1 = dir to resolve from, $2 = module name; true if require() works
  ( cd "$1" && node -e "require('$2')" ) >/dev/null 2>&1
}

# --- 1. code-server package itself (no scripts) ------------------------------
mkdir -p "$DEST"
DEST=$(readlink -f "$DEST")
cd "$DEST"
# A package.json pins npm's prefix here (otherwise npm walks up the tree).
[ -f package.json ] || echo '{ "name": "code-server-offline", "private": true }' > package.json
CS="$DEST/node_modules/code-server"
if [ "$(node -p "try{require('$CS/package.json').version}catch(e){''}")" != "$VERSION" ]; then
  log "npm install --ignore-scripts code-server@$VERSION"
  npm install --ignore-scripts --no-audit --no-fund "code-server@$VERSION"
fi

# --- 2. argon2 (top level; used for --auth password, but imported always) ----
if [ "${FORCE_REBUILD:-0}" = 1 ] || ! loads "$CS" argon2; then
  log "building argon2 from source (node-pre-gyp, no download)"
  ( cd "$DEST/node_modules/argon2" && \
    node ../@mapbox/node-pre-gyp/bin/node-pre-gyp rebuild --build-from-source ) \
    > "$DEST/node_modules/argon2/.offline-build.log" 2>&1 \
    || { tail -30 "$DEST/node_modules/argon2/.offline-build.log"; die "argon2 build failed"; }
fi

# --- 3. VS Code's own dependencies (what postinstall.sh would install) -------
VS="$CS/lib/vscode"
cd "$VS"
log "npm install --omit=dev --ignore-scripts in lib/vscode"
npm install --omit=dev --ignore-scripts --no-audit --no-fund

# 3a. ripgrep: @vscode/ripgrep's postinstall downloads rg from GitHub.
#     Debian's rg works fine as a drop-in (VS Code only execs it).
mkdir -p node_modules/@vscode/ripgrep/bin
install -m 0755 "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg

# 3b. native modules needed on Linux. @parcel/watcher ships prebuilt
#     @parcel/watcher-linux-* packages; @vscode/windows-* are win32-only.
for m in node-pty @vscode/spdlog @vscode/deviceid native-watchdog kerberos; do
  if [ "${FORCE_REBUILD:-0}" = 1 ] || ! loads "$VS" "$m"; then
    log "node-gyp rebuild $m"
    gyp_rebuild "$VS/node_modules/$m"
  fi
done
# node-pty's postinstall only cleans build/Release and writes compile_commands.json
# (IDE helper) — safe to skip.

# --- 4. the symlinks postinstall.sh creates ----------------------------------
log "symlinks (node_modules.asar, bin scripts)"
ln -sfn node_modules node_modules.asar
ln -sfn code-linux.sh    bin/remote-cli/code-server
ln -sfn browser-linux.sh bin/helpers/browser.sh

# --- 5. built-in extensions' shared deps (typescript) -----------------------
#     Scripts are allowed here: the only one is a local postinstall.mjs that
#     trims typescript.
if [ ! -f extensions/node_modules/typescript/package.json ]; then
  log "npm install --omit=dev in lib/vscode/extensions"
  ( cd extensions && npm install --omit=dev --no-audit --no-fund )
fi

# --- 6. smoke test -----------------------------------------------------------
log "smoke test"
for m in node-pty @vscode/spdlog @vscode/deviceid native-watchdog kerberos @parcel/watcher; do
  loads "$VS" "$m" || die "native module $m does not load"
done
loads "$CS" argon2 || die "argon2 does not load"
rg_ver=$("$VS/node_modules/@vscode/ripgrep/bin/rg" --version); echo "${rg_ver%%$'\n'*}"   # (no `| head`: SIGPIPE + pipefail)
# code-server writes a default config.yaml / logs under $XDG_CONFIG_HOME and
# $XDG_DATA_HOME (default ~/.config, ~/.local/share) on ANY invocation, even
# --version; keep that inside DEST.
XDG_CONFIG_HOME="$DEST/xdg/config" XDG_DATA_HOME="$DEST/xdg/data" \
  "$DEST/node_modules/.bin/code-server" --version

# --- 7. e2e tooling (optional): browser + driver + packager -----------------
#     Debian's chromium (NOT `npx playwright install`, which downloads from a
#     CDN) + playwright-core (driver only, no browser download) + @vscode/vsce.
if [ "${E2E_TOOLS:-1}" = 1 ]; then
  if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && [ "${SKIP_APT:-0}" != 1 ]; then
    log "apt-get install chromium"
    apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }
  fi
  TOOLS="$DEST/e2e-tools"
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{ "name": "e2e-tools", "private": true }' > "$TOOLS/package.json"
  if [ ! -f "$TOOLS/node_modules/playwright-core/package.json" ] || [ ! -x "$TOOLS/node_modules/.bin/vsce" ]; then
    log "npm install playwright-core @vscode/vsce in $TOOLS"
    # --ignore-scripts: vsce-sign's postinstall is only needed for signing.
    ( cd "$TOOLS" && npm install --ignore-scripts --no-audit --no-fund playwright-core @vscode/vsce )
  fi
  command -v chromium >/dev/null && chromium --version 2>/dev/null | grep -i chromium || echo "WARNING: no chromium"
  echo "playwright-core $(node -p "require('$TOOLS/node_modules/playwright-core/package.json').version")," \
       "vsce $("$TOOLS/node_modules/.bin/vsce" --version)"
fi

log "done: $DEST/node_modules/.bin/code-server  ($(du -sh "$DEST" | cut -f1))"
