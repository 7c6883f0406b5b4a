#!/usr/bin/env bash
# Podman benchmark, beside docker and the floor, interleaved in one run so
# that load on the (shared) machine hits every figure alike. Each round
# times, in turn:
#   floor:    `docker run -d` + `docker exec true` + `docker rm -f`
#             `podman run -d` + `podman exec true` + `podman rm -f`
#             one `docker exec true`, one `podman exec true` (running containers)
#   sanddune: scenario a (1 run, 1 iteration, head) and b (1 run, 5 iterations,
#             merge-to-head) with the fake Claude agent, docker then podman
# and reports medians and ratios (podman / docker, sanddune / its floor).
# Every sanddune run is checked (commit counts, no container left).
#
#   bench/podman-run.sh [-n ROUNDS] [-o RESULTS.md]     # as root
#
# The podman settings this host needs (runtime, cgroup_manager, ulimits) are
# not assumed: they are what `sanddune run`'s preflight names for the bench
# image, and the podman floor uses the same flags.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shared="${SANDDUNE_SHARED:-$root/../shared}"
rounds=5 out=""
while getopts "n:o:" opt; do
  case "$opt" in
    n) rounds="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) echo "usage: $0 [-n ROUNDS] [-o RESULTS.md]" >&2; exit 2 ;;
  esac
done
image="sanddune-bench:latest"
work="$(mktemp -d /tmp/sanddune-bench-podman.XXXXXX)"
pglobal=() prun=()
cleanup() {
  docker rm -f sanddune-bench-dfloor sanddune-bench-dexec >/dev/null 2>&1 || true
  podman "${pglobal[@]}" rm -f -t 0 --ignore sanddune-bench-pfloor sanddune-bench-pexec >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "bench: $*" >&2; }

docker info >/dev/null 2>&1 || { echo "bench: docker is not reachable (run scripts/ci-setup.sh as root)" >&2; exit 1; }
command -v podman >/dev/null || { echo "bench: podman is not installed (run scripts/ci-setup.sh as root)" >&2; exit 1; }
sanddune="${SANDDUNE_BIN:-}"
if [ -z "$sanddune" ]; then
  log "building sanddune"
  (cd "$root" && go build -o "$work/sanddune" ./cmd/sanddune) && sanddune="$work/sanddune"
fi

# Base images (the same debootstrap rootfs in both engines), then the fake
# Claude image in each, built the way each plugin's build-image builds it.
for e in docker podman; do
  SANDDUNE_TEST_IMAGE_TAGS="sanddune-base:bookworm" "$root/scripts/test-image.sh" --engine "$e" sanddune-test-base:bookworm >&2
done
ctx="$work/fake-claude"
cp -r "$shared/bench/fake-claude" "$ctx" && chmod -R u+w "$ctx"
docker image inspect "$image" >/dev/null 2>&1 ||
  (cd "$ctx" && "$sanddune" docker build-image --image-name "$image" --dockerfile Dockerfile >&2)

make_repo() { # DIR: the baseline's 50-file repo with one commit
  local d="$1" i
  mkdir -p "$d/src" "$d/.sanddune"
  git -C "$d" init -q -b main
  git -C "$d" config user.name "Bench Host"
  git -C "$d" config user.email bench-host@example.invalid
  echo "# bench" >"$d/README.md"
  printf '.env\nlogs\nworktrees\n' >"$d/.sanddune/.gitignore"
  for i in $(seq -w 0 47); do
    printf 'export const v%s = %s;\nexport function f%s() {\n  return v%s;\n}\n// end\n' "$i" "$i" "$i" "$i" >"$d/src/mod$i.ts"
  done
  git -C "$d" add -A && git -C "$d" commit -q -m "initial commit"
}

# The podman settings this host needs: ask sanddune's preflight.
make_repo "$work/probe"
cat >"$work/probe.hcl" <<HCL
sandbox "podman" "p" {
  image = "sanddune-base:bookworm"
}
agent "command" "a" {
  command = ["true"]
}
run "probe" {
  sandbox = sandbox.podman.p
  agent   = agent.command.a
  prompt  = "x"
}
HCL
settings=""
if ! "$sanddune" run -c "$work/probe.hcl" --repo "$work/probe" >/dev/null 2>"$work/probe.err"; then
  settings="$(sed -n '/add them to the sandbox block:/,$p' "$work/probe.err" | sed -n '2,$p' | grep -E '^  [a-z_]+ = ' || true)"
  [ -n "$settings" ] || { cat "$work/probe.err" >&2; echo "bench: podman cannot run here and preflight names no fix" >&2; exit 1; }
fi
log "podman settings for this host: ${settings:-none}"
while read -r line; do
  case "$line" in
    runtime*) pglobal+=(--runtime "$(echo "$line" | sed -E 's/.*"(.*)"/\1/')") ;;
    cgroup_manager*) pglobal+=(--cgroup-manager "$(echo "$line" | sed -E 's/.*"(.*)"/\1/')") ;;
    ulimits*) for u in $(echo "$line" | grep -oE '[a-z]+ = "[0-9:-]+"' | tr -d ' "'); do prun+=(--ulimit "$u"); done ;;
  esac
done <<<"$settings"
podman image inspect "$image" >/dev/null 2>&1 ||
  (cd "$ctx" && "$sanddune" podman build-image --image-name "$image" --containerfile Dockerfile "${pglobal[@]}" >&2)

for e in docker podman; do
  cat >"$work/$e.hcl" <<HCL
sandbox "$e" "bench1" {
  image = "$image"
  env   = { FAKE_CLAUDE_COMPLETE_AT = "1" }
$( [ "$e" = podman ] && echo "$settings")
}
sandbox "$e" "bench5" {
  image = "$image"
  env   = { FAKE_CLAUDE_COMPLETE_AT = "5" }
$( [ "$e" = podman ] && echo "$settings")
}
agent "claude" "fake" {
  model = "claude-opus-4-8"
  env   = { ANTHROPIC_API_KEY = "fake-key-for-the-fake-cli" }
}
run "a" {
  sandbox = sandbox.$e.bench1
  agent   = agent.claude.fake
  prompt  = "Append one line to fake-claude.log and commit it. When the task is done, reply with <promise>COMPLETE</promise>."
}
run "b" {
  sandbox         = sandbox.$e.bench5
  agent           = agent.claude.fake
  prompt          = "Append one line to fake-claude.log and commit it. When the task is done, reply with <promise>COMPLETE</promise>."
  max_iterations  = 5
  branch_strategy = { type = "merge-to-head" }
}
HCL
done

# Timed operations; each prints its wall time in microseconds.
us() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; echo "bench: $* failed" >&2; exit 1; }; e=$(date +%s%N); echo $(((e - s) / 1000)); }
docker_floor() {
  docker run -d --name sanddune-bench-dfloor --entrypoint sleep "$image" infinity
  docker exec sanddune-bench-dfloor true
  docker rm -f sanddune-bench-dfloor
}
podman_floor() {
  podman "${pglobal[@]}" run -d --name sanddune-bench-pfloor "${prun[@]}" --entrypoint sleep "$image" infinity
  podman "${pglobal[@]}" exec sanddune-bench-pfloor true
  podman "${pglobal[@]}" rm -f -t 0 sanddune-bench-pfloor
}
e2e() { # ENGINE SCENARIO: fresh repo, one sanddune process, checks
  local e="$1" sc="$2" repo="$work/e2e-repo"
  rm -rf "$repo" "$work/home" && mkdir -p "$work/home" && make_repo "$repo"
  HOME="$work/home" "$sanddune" run -c "$work/$e.hcl" --repo "$repo" "$sc" >"$work/e2e.out" 2>&1 ||
    { cat "$work/e2e.out" >&2; echo "bench: sanddune run $sc ($e) failed" >&2; return 1; }
  case "$sc" in
    a) [ "$(git -C "$repo" rev-list --count main)" = 2 ] ;;
    b) [ "$(git -C "$repo" rev-list --count main)" = 6 ] && [ -z "$(git -C "$repo" branch --list 'sanddune/*')" ] ;;
  esac || { cat "$work/e2e.out" >&2; echo "bench: scenario $sc ($e) produced the wrong commits" >&2; return 1; }
  [ -z "$("$e" ps -a --filter label=sanddune.repo="$repo" --format '{{.Names}}')" ] ||
    { echo "bench: containers left after $sc ($e)" >&2; return 1; }
}

docker run -d --name sanddune-bench-dexec --entrypoint sleep "$image" infinity >/dev/null
podman "${pglobal[@]}" run -d --name sanddune-bench-pexec "${prun[@]}" --entrypoint sleep "$image" infinity >/dev/null
labels=(dfloor pfloor dexec pexec da pa db pb)
declare -A T
for l in "${labels[@]}"; do T[$l]=""; done
for ((r = 0; r <= rounds; r++)); do # round 0 is the warm-up
  log "round $r/$rounds"
  v=(
    "$(us docker_floor)" "$(us podman_floor)"
    "$(us docker exec sanddune-bench-dexec true)" "$(us podman "${pglobal[@]}" exec sanddune-bench-pexec true)"
    "$(us e2e docker a)" "$(us e2e podman a)" "$(us e2e docker b)" "$(us e2e podman b)"
  )
  for x in "${v[@]}"; do [ -n "$x" ] || { echo "bench: a timed operation failed in round $r" >&2; exit 1; }; done
  [ "$r" = 0 ] && continue
  for i in "${!labels[@]}"; do T[${labels[$i]}]+="${v[$i]} "; done
done

median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{v[NR] = $1 / 1e6} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
declare -A M
for l in "${labels[@]}"; do M[$l]="$(median "${T[$l]}")"; done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
results="$work/results.md"
{
  echo "| operation | docker s | podman s | podman / docker |"
  echo "|---|---|---|---|"
  echo "| floor: \`run -d\` + \`exec true\` + \`rm -f\` | ${M[dfloor]} | ${M[pfloor]} | $(ratio "${M[pfloor]}" "${M[dfloor]}") |"
  echo "| floor: one \`exec true\` | ${M[dexec]} | ${M[pexec]} | $(ratio "${M[pexec]}" "${M[dexec]}") |"
  echo "| sanddune a: 1 run, 1 iteration, head | ${M[da]} | ${M[pa]} | $(ratio "${M[pa]}" "${M[da]}") |"
  echo "| sanddune b: 1 run, 5 iterations, merge-to-head | ${M[db]} | ${M[pb]} | $(ratio "${M[pb]}" "${M[db]}") |"
  echo
  echo "| sanddune / its engine's floor | docker | podman |"
  echo "|---|---|---|"
  echo "| a / (run + exec + rm) | $(ratio "${M[da]}" "${M[dfloor]}") | $(ratio "${M[pa]}" "${M[pfloor]}") |"
  echo "| b / (run + exec + rm + 4 exec) | $(ratio "${M[db]}" "$(awk -v f="${M[dfloor]}" -v x="${M[dexec]}" 'BEGIN {print f + 4 * x}')") | $(ratio "${M[pb]}" "$(awk -v f="${M[pfloor]}" -v x="${M[pexec]}" 'BEGIN {print f + 4 * x}')") |"
  echo
  echo "Medians of $rounds interleaved rounds (after 1 warm-up), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), docker $(docker version --format '{{.Server.Version}}'), $(podman --version), podman settings: ${settings:-none}."
} >"$results"
cat "$results"
[ -n "$out" ] && cp "$results" "$out"
exit 0
