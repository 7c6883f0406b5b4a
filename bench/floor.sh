#!/usr/bin/env bash
# sanddune against the Docker floor, interleaved: every round times each
# scenario's floor and sanddune back to back (alternating which goes first),
# so both see the same machine load, and reports per-round ratios with
# min/median/max. Workload: shared/bench/fake-claude (bench/docker.md).
#
#   one    1 run, 1 iteration, head         vs docker run -d + 1 agent exec + rm -f
#   five   1 run, 5 iterations, merge-to-head, session capture on
#                                           vs docker run -d + 5 agent execs + rm -f
#   p4     sanddune run -p 4  (branch)      vs 4 floor sequences in parallel
#   p20    sanddune run -p 20 (branch)      vs 20 floor sequences in parallel
#   config validate / run a with a 50-run file vs a file holding only run a
#   egress run a with an egress policy (sidecar enforcer) vs run a without
#   memory peak RSS (VmHWM) of the core and of each plugin process, 1 and 20
#          runs, the sum of each process's largest PSS (the binary's
#          text, shared by all of them, counted once) with its anonymous
#          and file-backed parts, and the largest PSS sum at one moment
#
# The floor execs the same fake agent (same argv, prompt on stdin) in a
# container of the same image with the repo bind-mounted at the workspace,
# so the agent's own work (~30 ms) is on both sides. Repos are made before
# each timer starts; every sanddune run is checked (commits, no container of
# its repo left). The 1-minute load average is recorded beside each figure.
#
#   bench/floor.sh [-r ROUNDS] [-s "one five p4 p20 config egress memory"] [-o OUT.md]
#
# Needs docker access; sanddune from $SANDDUNE_BIN, PATH, or built.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${SANDDUNE_SHARED:-$root/../shared}"
rounds=3 scenarios="one five p4 p20 config egress memory" out=""
while getopts "r:s:o:" opt; do
  case "$opt" in
    r) rounds="$OPTARG" ;;
    s) scenarios="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: $0 [-r ROUNDS] [-s SCENARIOS] [-o OUT.md]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/sanddune-floor.XXXXXX)"
floor_label="sanddune-bench-floor=$$"
cleanup() {
  docker ps -aq --filter "label=$floor_label" | xargs -r docker rm -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
. "$root/bench/lib.sh"
sanddune="$(find_sanddune)"
ensure_image "$sanddune"
(cd "$root" && go build -o "$work/peakrss" ./bench/peakrss)
mkdir -p "$work/home"
data="$work/data" # lines: scenario side round seconds load
: >"$data"

# ---- configs ----
# Runs: a (1 iteration, head), b (5, merge-to-head), cN (branch). Each
# scenario has a file holding only its runs; big.hcl holds 50 runs.
bench_providers >"$work/small.hcl"
{ bench_providers; bench_run_b; } >"$work/five.hcl"
{ bench_providers; bench_run_c 20; } >"$work/par.hcl"
{ bench_providers; bench_run_b; bench_run_c 48; } >"$work/big.hcl"
# egress.hcl: small.hcl with an egress policy.
bench_providers | bench_egress >"$work/egress.hcl"

# ---- the two sides ----
# floor_seq REPO ITERS: one container, ITERS agent execs, removal.
floor_seq() {
  local repo="$1" iters="$2" id i
  id="$(docker run -d --label "$floor_label" --user "$(id -u):$(id -g)" \
    -e FAKE_CLAUDE_COMPLETE_AT="$iters" -e ANTHROPIC_API_KEY=fake-key-for-the-fake-cli \
    -v "$repo:/home/agent/workspace" -w /home/agent/workspace "$bench_image")"
  for ((i = 0; i < iters; i++)); do
    docker exec -i -w /home/agent/workspace "$id" claude --print --verbose --output-format stream-json \
      --model claude-opus-4-8 --dangerously-skip-permissions -p - <<<"$bench_prompt" >/dev/null
  done
  docker rm -f "$id" >/dev/null
}
# floor N ITERS: N floor sequences in parallel on fresh repos.
floor() {
  local n="$1" iters="$2" i pids=()
  for ((i = 0; i < n; i++)); do rm -rf "$work/f$i" && make_repo "$work/f$i"; done
  local s; s=$(now)
  for ((i = 0; i < n; i++)); do floor_seq "$work/f$i" "$iters" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || { log "floor sequence failed"; exit 1; }; done
  echo $(( $(now) - s ))
  for ((i = 0; i < n; i++)); do
    [ "$(git -C "$work/f$i" rev-list --count main)" = $((iters + 1)) ] || { log "floor: wrong commit count"; exit 1; }
  done
}
# sd CONFIG ARGS...: one timed sanddune process on a fresh repo ($work/r).
sd() {
  local cfg="$1"; shift
  rm -rf "$work/r" && make_repo "$work/r"
  local s; s=$(now)
  HOME="$work/home" "$sanddune" "$@" -c "$work/$cfg" --repo "$work/r" >"$work/sd.out" 2>&1 ||
    { cat "$work/sd.out" >&2; log "sanddune $* failed"; exit 1; }
  echo $(( $(now) - s ))
  local left
  left="$(docker ps -aq --filter "label=sanddune.repo=$work/r")"
  [ -z "$left" ] || { log "containers left after sanddune $*: $left"; exit 1; }
}
# sd_validate CONFIG: one timed `sanddune validate` in a repo.
sd_validate() {
  [ -d "$work/v" ] || make_repo "$work/v"
  local s; s=$(now)
  (cd "$work/v" && "$sanddune" validate -c "$work/$1" >"$work/sd.out" 2>&1) ||
    { cat "$work/sd.out" >&2; log "sanddune validate $1 failed"; exit 1; }
  echo $(( $(now) - s ))
}
commits() { git -C "$work/r" rev-list --count "$1"; }
check() { [ "$1" = "$2" ] || { cat "$work/sd.out" >&2; log "$3: expected $2, got $1"; exit 1; }; }

# side SCENARIO SIDE ROUND: times one side of one scenario.
side() {
  local sc="$1" which="$2" r="$3" t names i
  case "$sc/$which" in
    one/floor) t=$(floor 1 1) ;;
    one/sd) t=$(sd small.hcl run a); check "$(commits main)" 2 one ;;
    five/floor) t=$(floor 1 5) ;;
    five/sd) t=$(sd five.hcl run b); check "$(commits main)" 6 five
      check "$(git -C "$work/r" branch --list 'sanddune/*')" "" "five: temp branches" ;;
    p4/floor) t=$(floor 4 1) ;;
    p20/floor) t=$(floor 20 1) ;;
    p4/sd | p20/sd)
      local n=${sc#p}; names=()
      for ((i = 1; i <= n; i++)); do names+=("c$i"); done
      t=$(sd par.hcl run -p "$n" "${names[@]}")
      for ((i = 1; i <= n; i++)); do check "$(commits "bench/c$i")" 2 "$sc c$i"; done ;;
    config/floor) t=$(sd small.hcl run a); record config-run small "$r" "$t"; t=$(sd_validate small.hcl) ;;
    config/sd) t=$(sd big.hcl run a); record config-run big "$r" "$t"; t=$(sd_validate big.hcl) ;;
    egress/floor) t=$(sd small.hcl run a); check "$(commits main)" 2 egress-base ;;
    egress/sd) t=$(sd egress.hcl run a); check "$(commits main)" 2 egress ;;
    memory/floor) memory 1; return ;;
    memory/sd) memory 20; return ;;
  esac
  record "$sc" "$which" "$r" "$t"
}

# memory N: peak RSS of sanddune's processes for N concurrent runs.
memory() {
  local n="$1" names=() i
  for ((i = 1; i <= n; i++)); do names+=("c$i"); done
  rm -rf "$work/r" && make_repo "$work/r"
  HOME="$work/home" "$work/peakrss" -match "$sanddune" -- "$sanddune" run -c "$work/par.hcl" --repo "$work/r" -p "$n" "${names[@]}" \
    >"$work/sd.out" 2>"$work/mem.out" || { cat "$work/mem.out" >&2; log "memory run failed"; exit 1; }
  local l; l=$(load1)
  # The core's argv is "sanddune run ..."; every other sanddune process is a plugin.
  awk -v n="$n" -v l="$l" '
    $1 == "peakrss" && $2 == "total" { total = $4; pss = $5; anon = $6; file = $7; once = $8; next }
    $1 == "peakrss" { if ($8 == "run") core = $3; else { np++; if ($3 > pmax) pmax = $3 } }
    END { printf "memory%d core %.1f plugins %d max %.1f total %.1f pss %.1f load %s anon %.1f file %.1f once %.1f\n", n, core / 1024, np, pmax / 1024, total / 1024, pss / 1024, l, anon / 1024, file / 1024, once / 1024 }' "$work/mem.out" >>"$work/mem.data"
}

bench_rounds "$rounds" "$scenarios" side floor sd

# ---- report ----
log "raw figures:"; cat "$data" "$work/mem.data" 2>/dev/null >&2 || true
{
  echo "| scenario | floor / base s, median (min–max) | sanddune s | ratio per round | goal | load (1 min) |"
  echo "|---|---|---|---|---|---|"
  ratio_row one floor sd "one iteration, head" "≤ 1.10"
  ratio_row five floor sd "five iterations, merge-to-head, sessions on" "≤ 1.20"
  ratio_row p4 floor sd "4 concurrent runs (-p 4)" "≤ 1.10"
  ratio_row p20 floor sd "20 concurrent runs (-p 20)" "≤ 1.10"
  ratio_row config floor sd "validate: 50-run file vs 1-run file" "≤ 1.1"
  ratio_row config-run small big "run a: 50-run file vs 1-run file" "≤ 1.1"
  ratio_row egress floor sd "run a with an egress policy vs without" "≤ 1.1"
  if [ -s "$work/mem.data" ]; then
    echo
    echo "| memory, MiB | core peak RSS | plugin processes | largest plugin peak RSS | sum of peak RSS | sum of largest PSS | its anonymous / file-backed part | largest PSS sum at one moment | goal | load |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for n in 1 20; do
      grep -q "^memory$n " "$work/mem.data" || continue
      col() { awk -v n="$n" -v c="$1" '$1 == "memory" n { print $c }' "$work/mem.data" | stats; }
      set -- $(col 3); local_core=$1
      set -- $(col 5); local_np=$1
      set -- $(col 7); local_max=$1
      set -- $(col 13); local_load="$2–$3"
      set -- $(col 11); local_pss="**$1** ($2–$3)"
      set -- $(col 15); local_split="$1"
      set -- $(col 17); local_split="$local_split / $1"
      set -- $(col 19); local_once="$1 ($2–$3)"
      set -- $(col 9)
      echo "| $n run(s) | $local_core | ${local_np%.*} | $local_max | $1 ($2–$3) | $local_pss | $local_split | $local_once | $( ((n > 1)) && echo "< 60" || echo "< 45") | $local_load |"
    done
  fi
  echo
  echo "$rounds rounds, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, docker $(docker version --format '{{.Server.Version}}'), git $(git --version | awk '{print $3}'), sanddune $("$sanddune" version 2>/dev/null | head -1)."
} | tee "$work/report.md"
[ -z "$out" ] || cp "$work/report.md" "$out"
