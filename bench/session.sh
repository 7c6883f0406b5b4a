#!/usr/bin/env bash
# A session of 3 steps against 3 separate runs, interleaved: every round
# times `sanddune run s` (one session: one container, 3 agent steps) and
# `sanddune run r1 r2 r3` (three runs: a container each) back to back,
# alternating which goes first, on fresh repos, and reports the per-round
# ratio runs/session (min/median/max) and how many containers each side
# created (docker events of its repo). Workload: shared/bench/fake-claude,
# one iteration per step or run, all on one branch (3 commits either way).
#
#   bench/session.sh [-r ROUNDS]
#
# Needs docker access; sanddune from $SANDDUNE_BIN, PATH, or built.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${SANDDUNE_SHARED:-$root/../shared}"
rounds=5
while getopts "r:" opt; do
  case "$opt" in
    r) rounds="$OPTARG" ;;
    *) echo "usage: $0 [-r ROUNDS]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/sanddune-session-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
. "$root/bench/lib.sh"
sanddune="$(find_sanddune)"
ensure_image "$sanddune"
mkdir -p "$work/home"

{
  bench_providers
  for i in 1 2 3; do
    cat <<HCL
run "r$i" {
  sandbox         = sandbox.docker.bench1
  agent           = agent.claude.fake
  prompt          = "$bench_prompt"
  branch_strategy = { type = "branch", branch = "bench/s" }
}
HCL
  done
  echo 'session "s" {'
  echo '  sandbox         = sandbox.docker.bench1'
  echo '  branch_strategy = { type = "branch", branch = "bench/s" }'
  for i in 1 2 3; do
    printf '  step "s%s" {\n    agent  = agent.claude.fake\n    prompt = "%s"\n  }\n' "$i" "$bench_prompt"
  done
  echo '}'
} >"$work/cfg.hcl"

now() { date +%s%N; }
# side NAME ARGS...: one timed sanddune process on a fresh repo; prints
# "seconds containers".
side() {
  local repo="$work/$1"; shift
  rm -rf "$repo" && make_repo "$repo"
  local since s t n
  since="$(date +%s)"
  s=$(now)
  HOME="$work/home" "$sanddune" run "$@" -c "$work/cfg.hcl" --repo "$repo" >"$work/out" 2>&1 ||
    { cat "$work/out" >&2; log "sanddune run $* failed"; exit 1; }
  t=$(( $(now) - s ))
  [ "$(git -C "$repo" rev-list --count bench/s)" = 4 ] || { log "run $*: want 3 commits on bench/s"; exit 1; }
  n="$(docker events --since "$since" --until "$(date +%s)" --filter event=create --filter "label=sanddune.repo=$repo" --format '{{.ID}}' | wc -l)"
  awk -v ns="$t" -v n="$n" 'BEGIN { printf "%.3f %d\n", ns / 1e9, n }'
}

: >"$work/data"
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    a=$(side sess s); b=$(side runs r1 r2 r3)
  else
    b=$(side runs r1 r2 r3); a=$(side sess s)
  fi
  echo "$a $b $(cut -d' ' -f1 /proc/loadavg)" >>"$work/data"
  log "round $r: session ${a% *}s (${a#* } container), runs ${b% *}s (${b#* } containers)"
done
echo "| rounds | session s (median) | 3 runs s (median) | runs/session min / median / max | containers session / runs | load |"
echo "|---|---|---|---|---|---|"
awk '{ print $3 / $1 }' "$work/data" | stats | {
  read -r med min max
  printf "| %d | %s | %s | %.2f / %.2f / %.2f | %s / %s | %s–%s |\n" "$rounds" \
    "$(cut -d' ' -f1 "$work/data" | stats | cut -d' ' -f1)" "$(cut -d' ' -f3 "$work/data" | stats | cut -d' ' -f1)" \
    "$min" "$med" "$max" "$(cut -d' ' -f2 "$work/data" | sort -u | paste -sd/)" "$(cut -d' ' -f4 "$work/data" | sort -u | paste -sd/)" \
    "$(cut -d' ' -f5 "$work/data" | sort -g | head -1)" "$(cut -d' ' -f5 "$work/data" | sort -g | tail -1)"
}
