#!/usr/bin/env bash
# sanddune with podman against podman's floor, beside docker and its floor,
# interleaved: every round times, for each scenario, the podman floor,
# sanddune on podman, the docker floor and sanddune on docker back to back
# (alternating the order), so all four see the same machine load, and
# reports per-round ratios with min/median/max. Workload:
# shared/bench/fake-claude (bench/lib.sh, as bench/floor.sh).
#
#   one   1 run, 1 iteration, head        vs ENGINE run -d + 1 agent exec + rm -f
#   five  1 run, 5 iterations, merge-to-head
#                                         vs ENGINE run -d + 5 agent execs + rm -f
#
# The floor execs the same fake agent (same argv, prompt on stdin) in a
# container of the same image with a fresh repo bind-mounted at the
# workspace. The podman settings this host needs (runtime, cgroup_manager,
# ulimits) are not assumed: they are what `sanddune run`'s preflight names,
# and podman's floor uses the same flags. Every sanddune run is checked
# (commits, no container of its repo left); the 1-minute load average is
# recorded beside each figure.
#
#   bench/podman-run.sh [-r ROUNDS] [-s "one five"] [-o OUT.md]   # as root
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${SANDDUNE_SHARED:-$root/../shared}"
rounds=3 scenarios="one five" out=""
while getopts "r:s:o:" opt; do
  case "$opt" in
    r) rounds="$OPTARG" ;;
    s) scenarios="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: $0 [-r ROUNDS] [-s SCENARIOS] [-o OUT.md]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/sanddune-bench-podman.XXXXXX)"
floor_label="sanddune-bench-floor=$$"
pglobal=() prun=()
cleanup() {
  docker ps -aq --filter "label=$floor_label" | xargs -r docker rm -f >/dev/null 2>&1 || true
  podman ps -aq --filter "label=$floor_label" | xargs -r podman "${pglobal[@]}" rm -f -t 0 >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
. "$root/bench/lib.sh"
command -v podman >/dev/null || { log "podman is not installed (run scripts/ci-setup.sh as root)"; exit 1; }
sanddune="$(find_sanddune)"
ensure_image "$sanddune"
mkdir -p "$work/home"
data="$work/data" # lines: scenario side round seconds load
: >"$data"

# ---- podman: this host's settings, the same images ----
SANDDUNE_TEST_IMAGE_TAGS="sanddune-base:bookworm" "$root/scripts/test-image.sh" --engine podman sanddune-test-base:bookworm >&2
make_repo "$work/probe"
cat >"$work/probe.hcl" <<HCL
sandbox "podman" "p" {
  image = "sanddune-base:bookworm"
}
agent "command" "a" {
  command = ["true"]
}
run "probe" {
  prompt = "x"
}
HCL
settings=""
if ! "$sanddune" run -c "$work/probe.hcl" --repo "$work/probe" >/dev/null 2>"$work/probe.err"; then
  settings="$(sed -n '/add them to the sandbox block:/,$p' "$work/probe.err" | sed -n '2,$p' | grep -E '^  [a-z_]+ = ' || true)"
  [ -n "$settings" ] || { cat "$work/probe.err" >&2; log "podman cannot run here and preflight names no fix"; exit 1; }
fi
log "podman settings for this host: ${settings:-none}"
while read -r line; do
  case "$line" in
    runtime*) pglobal+=(--runtime "$(sed -E 's/.*"(.*)"/\1/' <<<"$line")") ;;
    cgroup_manager*) pglobal+=(--cgroup-manager "$(sed -E 's/.*"(.*)"/\1/' <<<"$line")") ;;
    ulimits*) for u in $(grep -oE '[a-z]+ = "[0-9:-]+"' <<<"$line" | tr -d ' "'); do prun+=(--ulimit "$u"); done ;;
  esac
done <<<"$settings"
if ! podman image exists "$bench_image"; then
  log "building $bench_image (podman)"
  cp -r "$shared/bench/fake-claude" "$work/ctx" && chmod -R u+w "$work/ctx"
  (cd "$work/ctx" && "$sanddune" podman build-image --image-name "$bench_image" --containerfile Dockerfile "${pglobal[@]}" >&2)
fi

# ---- configs: lib.sh's blocks, and the same on podman ----
{ bench_providers; bench_run_b; } >"$work/docker.hcl"
sed -e 's/sandbox "docker"/sandbox "podman"/; s/sandbox\.docker\./sandbox.podman./' "$work/docker.hcl" |
  awk -v s="$settings" '{ print } /FAKE_CLAUDE_COMPLETE_AT/ && s != "" { print s }' >"$work/podman.hcl"

# ---- the sides ----
# floor_seq ENGINE REPO ITERS: one container, ITERS agent execs, removal.
floor_seq() {
  local e="$1" repo="$2" iters="$3" id i g=() r=() rm=(rm -f)
  # podman rm -f waits 10 s for SIGTERM first; docker's (and sanddune's) do not.
  [ "$e" = podman ] && g=("${pglobal[@]}") r=("${prun[@]}") rm=(rm -f -t 0)
  id="$("$e" "${g[@]}" run -d --label "$floor_label" --user "$(id -u):$(id -g)" "${r[@]}" \
    -e FAKE_CLAUDE_COMPLETE_AT="$iters" -e ANTHROPIC_API_KEY=fake-key-for-the-fake-cli \
    -v "$repo:/home/agent/workspace" -w /home/agent/workspace "$bench_image")"
  for ((i = 0; i < iters; i++)); do
    "$e" "${g[@]}" exec -i -w /home/agent/workspace "$id" claude --print --verbose --output-format stream-json \
      --model claude-opus-4-8 --dangerously-skip-permissions -p - <<<"$bench_prompt" >/dev/null
  done
  "$e" "${g[@]}" "${rm[@]}" "$id" >/dev/null
}
# floor ENGINE ITERS: one timed floor sequence on a fresh repo.
floor() {
  rm -rf "$work/f" && make_repo "$work/f"
  local s; s=$(now)
  floor_seq "$1" "$work/f" "$2" || { log "$1 floor sequence failed"; exit 1; }
  echo $(( $(now) - s ))
  [ "$(git -C "$work/f" rev-list --count main)" = $(($2 + 1)) ] || { log "$1 floor: wrong commit count"; exit 1; }
}
# sd ENGINE RUN: one timed sanddune process on a fresh repo ($work/r). HOME
# stays across rounds, and with it the user cache dir where podman's
# preflight remembers a test container that started, as on a user's machine.
sd() {
  local e="$1" run="$2"
  rm -rf "$work/r" && make_repo "$work/r"
  local s; s=$(now)
  HOME="$work/home" "$sanddune" run -c "$work/$e.hcl" --repo "$work/r" "$run" >"$work/sd.out" 2>&1 ||
    { cat "$work/sd.out" >&2; log "sanddune run $run ($e) failed"; exit 1; }
  echo $(( $(now) - s ))
  local left
  left="$("$e" ps -aq --filter "label=sanddune.repo=$work/r")"
  [ -z "$left" ] || { log "containers left after sanddune run $run ($e): $left"; exit 1; }
}
commits() { git -C "$work/r" rev-list --count "$1"; }
check() { [ "$1" = "$2" ] || { cat "$work/sd.out" >&2; log "$3: expected $2, got $1"; exit 1; }; }

# side SCENARIO SIDE ROUND: SIDE is ENGINE-floor or ENGINE-sd.
side() {
  local sc="$1" which="$2" r="$3" t e="${2%-*}"
  case "$sc/${which#*-}" in
    one/floor) t=$(floor "$e" 1) ;;
    one/sd) t=$(sd "$e" a); check "$(commits main)" 2 "one ($e)" ;;
    five/floor) t=$(floor "$e" 5) ;;
    five/sd) t=$(sd "$e" b); check "$(commits main)" 6 "five ($e)"
      check "$(git -C "$work/r" branch --list 'sanddune/*')" "" "five ($e): temp branches" ;;
  esac
  record "$sc" "$which" "$r" "$t"
}

bench_rounds "$rounds" "$scenarios" side podman-floor podman-sd docker-floor docker-sd

# ---- report ----
log "raw figures:"; cat "$data" >&2
{
  echo "| scenario: what / against what | base s, median (min–max) | measured s | ratio per round | load (1 min) |"
  echo "|---|---|---|---|---|"
  for sc in $scenarios; do
    case "$sc" in one) n="one iteration, head" ;; five) n="five iterations, merge-to-head" ;; esac
    ratio_row "$sc" podman-floor podman-sd "$n: sanddune on podman / podman floor"
    ratio_row "$sc" docker-floor docker-sd "$n: sanddune on docker / docker floor"
    ratio_row "$sc" docker-floor podman-floor "$n: podman floor / docker floor"
    ratio_row "$sc" docker-sd podman-sd "$n: sanddune on podman / on docker"
  done
  echo
  echo "$rounds rounds, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, docker $(docker version --format '{{.Server.Version}}'), $(podman --version), podman settings: $(echo ${settings:-none}), sanddune $("$sanddune" version 2>/dev/null | head -1)."
} | tee "$work/report.md"
[ -z "$out" ] || cp "$work/report.md" "$out"
