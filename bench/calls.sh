#!/usr/bin/env bash
# What one sanddune run asks of git and of the Docker daemon: traced with
# strace, it counts the git processes started, those started while the
# repository's admin flock (<git-common-dir>/sanddune/locks/.admin) was held
# (by any run: at -p 4 another run's may start meanwhile), the Docker Engine
# API requests (request lines written to the daemon's socket), the other
# processes and the connections made to the daemon, for scenario one
# (run a: 1 iteration, head), five (run b: 5 iterations, merge-to-head),
# p4 (runs c1..c4 of one sandbox block at once, branch) and egress (run a
# with an egress policy), on the workload of bench/lib.sh. Counts, not times: strace slows everything,
# so no time is reported.
#
#   bench/calls.sh [-s "one five p4 egress"] [-v]   # -v lists each git call and request
#
# Needs docker access and strace; sanddune from $SANDDUNE_BIN, PATH, or built.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${SANDDUNE_SHARED:-$root/../shared}"
scenarios="one five p4 egress" verbose=0
while getopts "s:v" opt; do
  case "$opt" in
    s) scenarios="$OPTARG" ;;
    v) verbose=1 ;;
    *) echo "usage: $0 [-s SCENARIOS] [-v]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/sanddune-calls.XXXXXX)"
trap 'rm -rf "$work"' EXIT
. "$root/bench/lib.sh"
command -v strace >/dev/null || { log "strace is not installed (apt-get install strace)"; exit 1; }
sanddune="$(find_sanddune)"
ensure_image "$sanddune"
mkdir -p "$work/home"
{ bench_providers; bench_run_b; bench_run_c 4; } >"$work/bench.hcl"
bench_egress <"$work/bench.hcl" >"$work/egress.hcl"

echo "| scenario | git calls | git calls under the admin lock | Docker API requests | daemon connections | other processes |"
echo "|---|---|---|---|---|---|"
for sc in $scenarios; do
  cfg=bench.hcl
  case "$sc" in
    one) runs=(a) ;; five) runs=(b) ;; p4) runs=(-p 4 c1 c2 c3 c4) ;; egress) runs=(a) cfg=egress.hcl ;;
    *) log "unknown scenario $sc"; exit 2 ;;
  esac
  rm -rf "$work/r" && make_repo "$work/r"
  HOME="$work/home" strace -f -qq -y -s 256 -e trace=execve,connect,write,flock,close -e signal=none -o "$work/trace" \
    "$sanddune" run -c "$work/$cfg" --repo "$work/r" "${runs[@]}" >"$work/out" 2>&1 ||
    { cat "$work/out" >&2; log "sanddune run ${runs[*]} failed"; exit 1; }
  execs="$(grep -E 'execve\("[^"]*", \[' "$work/trace" | grep -v ' = -1 ' | sed -E 's/.*execve\("[^"]*", \[([^]]*)\].*/\1/')"
  git="$(grep -c '^"git"' <<<"$execs" || true)"
  other="$(grep -vc '^"git"' <<<"$execs" || true)"
  reqs="$(grep -oE 'write\([0-9]+(<[^>]*>)?, "(GET|HEAD|POST|PUT|DELETE) /[^ ]*' "$work/trace" | sed -E 's/^write\([0-9]+(<[^>]*>)?, "//' || true)"
  conns="$(grep -cE 'connect\([0-9]+(<[^>]*>)?, \{sa_family=AF_UNIX, sun_path="[^"]*docker\.sock"' "$work/trace" || true)"
  locked="$(awk '/flock\([0-9]+<[^>]*\/\.admin>, LOCK_EX/ && / = 0$/ { held = 1; next }
    /close\([0-9]+<[^>]*\/\.admin>/ { held = 0; next }
    held && /execve\("[^"]*", \["[^"]*git"/ && !/ = -1 / { n++ } END { print n + 0 }' "$work/trace")"
  echo "| $sc (run ${runs[*]}) | $git | $locked | $(grep -c . <<<"$reqs" || true) | $conns | $((other - 1)) |"
  if ((verbose)); then
    { echo "-- $sc: git"; grep '^"git"' <<<"$execs" | cut -c1-120
      echo "-- $sc: other processes"; grep -v '^"git"' <<<"$execs" | cut -c1-120; echo "-- $sc: requests"
      sed -E 's/[0-9a-f]{64}/ID/g; s/\?.*//' <<<"$reqs"; } >&2
  fi
done
