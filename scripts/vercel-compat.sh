#!/usr/bin/env bash
# Drives the fake Vercel API (plugins/vercel/vercelfake) with the official
# @vercel/sandbox SDK from the npm registry at a pinned version: create,
# write files, run commands (waited and detached) with logs, kill, read
# files, get, list, stop, delete. If the SDK cannot use the fake, the fake
# is wrong. Needs go, node (>= 20), npm and bubblewrap; no Vercel account.
set -euo pipefail

SDK_VERSION=3.5.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
log() { echo "vercel-compat: $*"; }

cache="${SANDDUNE_VERCEL_COMPAT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sanddune/vercel-compat}"
prefix="$cache/sdk-$SDK_VERSION"
if [ ! -f "$prefix/node_modules/@vercel/sandbox/package.json" ]; then
  log "installing @vercel/sandbox@$SDK_VERSION into $prefix"
  mkdir -p "$prefix"
  [ -f "$prefix/package.json" ] || echo '{"private":true,"type":"module"}' >"$prefix/package.json"
  (cd "$prefix" && npm install --no-audit --no-fund --silent "@vercel/sandbox@$SDK_VERSION")
fi

work="$(mktemp -d)"
trap 'exec 3>&- 2>/dev/null || true; kill "$fake_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/vercelfaked" ./plugins/vercel/vercelfake/vercelfaked)
mkfifo "$work/in"
"$work/vercelfaked" -token compat-token -team team_compat <"$work/in" >"$work/url" &
fake_pid=$!
exec 3>"$work/in" # the fake serves until this closes
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -1 "$work/url")"
[ -n "$url" ] || { log "the fake did not start"; exit 1; }
log "fake at $url, SDK $SDK_VERSION, node $(node --version)"
cp "$here/vercel-compat.mjs" "$prefix/compat.mjs"
FAKE_URL="$url" node "$prefix/compat.mjs"
