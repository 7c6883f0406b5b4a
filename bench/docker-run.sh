#!/usr/bin/env bash
# Docker benchmark: the physical floor (docker run, docker exec, git worktree
# add/remove) and, when a sanddune binary is available, end-to-end runs with
# the fake Claude agent from $shared/bench/fake-claude on the predecessor's
# baseline workload:
#   a: 1 run, 1 iteration, head              (FAKE_CLAUDE_COMPLETE_AT=1)
#   b: 1 run, 5 iterations, merge-to-head    (FAKE_CLAUDE_COMPLETE_AT=5)
#   c: 4 concurrent runs, branch strategy    (FAKE_CLAUDE_COMPLETE_AT=1)
# Every timed run is checked (commit counts, no containers or temp branches
# left) and the script fails otherwise. Needs root or docker access.
#
#   bench/docker-run.sh [-n RUNS] [-f FLOOR_RUNS] [-o RESULTS.md]
#
# sanddune is taken from $SANDDUNE_BIN, else PATH, else built into a temp
# dir; set SANDDUNE_BENCH_E2E=0 to time the floor only. The shared/ dir is
# $SANDDUNE_SHARED (default: ../shared beside the checkout).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${SANDDUNE_SHARED:-$root/../shared}"
runs=5 floor_runs=10 out=""
while getopts "n:f:o:" opt; do
  case "$opt" in
    n) runs="$OPTARG" ;;
    f) floor_runs="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: $0 [-n RUNS] [-f FLOOR_RUNS] [-o RESULTS.md]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/sanddune-bench.XXXXXX)"
. "$root/bench/lib.sh"
image="$bench_image"
cleanup() {
  docker rm -f sanddune-bench-floor >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
results="$work/results.md"

sanddune=""
[ "${SANDDUNE_BENCH_E2E:-1}" = 0 ] || sanddune="$(find_sanddune)"
ensure_image "$sanddune"

# timeit LABEL N CMD...: runs CMD N times (after one warm-up) and appends
# "| LABEL | median | min | max | N |" to the results.
timeit() {
  local label="$1" n="$2"; shift 2
  "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; echo "bench: warm-up of '$label' failed" >&2; exit 1; }
  local ts=() i s e
  for ((i = 0; i < n; i++)); do
    s=$(date +%s%N)
    "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; echo "bench: '$label' failed" >&2; exit 1; }
    e=$(date +%s%N)
    ts+=($(( (e - s) / 1000 )))
  done
  printf '%s\n' "${ts[@]}" | sort -n | awk -v label="$label" -v n="$n" '
    { v[NR] = $1 / 1e6 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "| %s | %.3f | %.3f | %.3f | %d |\n", label, m, v[1], v[NR], n }' | tee -a "$results" >&2
}

{
  echo "| operation | wall median s | min | max | n |"
  echo "|---|---|---|---|---|"
} >"$results"

# Floor.
floor_run_exec_rm() {
  docker run -d --name sanddune-bench-floor --entrypoint sleep "$image" infinity >/dev/null
  docker exec sanddune-bench-floor true
  docker rm -f sanddune-bench-floor >/dev/null
}
worktree_cycle() {
  git -C "$work/floor-repo" worktree add -q -b bench-wt "$work/floor-wt" HEAD
  git -C "$work/floor-repo" worktree remove --force "$work/floor-wt"
  git -C "$work/floor-repo" branch -q -D bench-wt
}
make_repo "$work/floor-repo"
timeit "\`docker run --rm --entrypoint true $image\`" "$floor_runs" docker run --rm --entrypoint true "$image"
timeit "\`docker run -d\` + \`docker exec true\` + \`docker rm -f\`" "$floor_runs" floor_run_exec_rm
docker run -d --name sanddune-bench-floor --entrypoint sleep "$image" infinity >/dev/null
timeit "one \`docker exec <running> true\`" "$floor_runs" docker exec sanddune-bench-floor true
docker rm -f sanddune-bench-floor >/dev/null
timeit "\`git worktree add\` + \`remove --force\` + \`branch -D\` (50 files)" "$floor_runs" worktree_cycle

# End to end.
if [ -n "$sanddune" ]; then
  { bench_providers; bench_run_b; bench_run_c 4; } >"$work/bench.hcl"

  e2e() { # scenario: fresh repo, one sanddune process, checks
    local sc="$1" repo="$work/e2e-repo"
    rm -rf "$repo" "$work/home" && mkdir -p "$work/home" && make_repo "$repo"
    local names=("$sc")
    [ "$sc" = c ] && names=(-p 4 c1 c2 c3 c4)
    local s e
    s=$(date +%s%N)
    HOME="$work/home" "$sanddune" run -c "$work/bench.hcl" --repo "$repo" "${names[@]}" >"$work/e2e.out" 2>&1 ||
      { cat "$work/e2e.out" >&2; echo "bench: sanddune run $sc failed" >&2; return 1; }
    e=$(date +%s%N)
    case "$sc" in
      a) [ "$(git -C "$repo" rev-list --count main)" = 2 ] ;;
      b) [ "$(git -C "$repo" rev-list --count main)" = 6 ] && [ -z "$(git -C "$repo" branch --list 'sanddune/*')" ] ;;
      c) for i in 1 2 3 4; do [ "$(git -C "$repo" rev-list --count "bench/c$i")" = 2 ] || return 1; done ;;
    esac || { cat "$work/e2e.out" >&2; echo "bench: scenario $sc produced the wrong commits" >&2; return 1; }
    left="$(docker ps -a --filter label=sanddune.run --filter "ancestor=$image" --format "{{.Names}} {{.Status}}")"
    [ -z "$left" ] || { echo "bench: containers left after $sc: $left" >&2; return 1; }
    echo $(( (e - s) / 1000 ))
  }
  for sc in a b c; do
    e2e "$sc" >/dev/null # warm-up
    ts=()
    for ((i = 0; i < runs; i++)); do ts+=("$(e2e "$sc")"); done
    label="$sc: $(case $sc in a) echo "1 run, 1 iteration, head" ;; b) echo "1 run, 5 iterations, merge-to-head" ;; c) echo "4 concurrent runs, branch" ;; esac)"
    printf '%s\n' "${ts[@]}" | sort -n | awk -v label="$label" -v n="$runs" '
      { v[NR] = $1 / 1e6 }
      END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "| sanddune %s | %.3f | %.3f | %.3f | %d |\n", label, m, v[1], v[NR], n }' | tee -a "$results" >&2
  done
else
  log "no sanddune binary: end-to-end scenarios skipped"
fi

{
  echo
  echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) CPUs, docker $(docker version --format '{{.Server.Version}}'), git $(git --version | awk '{print $3}')."
} >>"$results"
cat "$results"
[ -n "$out" ] && cp "$results" "$out"
exit 0
