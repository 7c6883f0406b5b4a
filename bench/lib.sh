# Shared by the bench scripts (sourced): the predecessor's baseline workload
# (a 50-file repo, the fake Claude CLI under $shared/bench/fake-claude).
# Expects $root, $shared, $work.

bench_image="sanddune-bench:latest"
bench_prompt="Append one line to fake-claude.log and commit it. When the task is done, reply with <promise>COMPLETE</promise>."

log() { echo "bench: $*" >&2; }

# find_sanddune: $SANDDUNE_BIN, else PATH, else a fresh build into $work
# (with its built-in plugins beside it, as make install puts them).
find_sanddune() {
  local s="${SANDDUNE_BIN:-$(command -v sanddune || true)}"
  if [ -z "$s" ]; then
    log "building sanddune"
    (cd "$root" && go build -o "$work/" ./cmd/...) && s="$work/sanddune"
  fi
  echo "$s"
}

# ensure_image [SANDDUNE]: the base image and the fake-claude image with the
# host UID, built as `sanddune docker build-image` would build it.
ensure_image() {
  local sd="${1:-}"
  docker info >/dev/null 2>&1 || { log "docker is not reachable (run scripts/ci-setup.sh as root)"; exit 1; }
  SANDDUNE_TEST_IMAGE_TAGS="sanddune-base:bookworm" "$root/scripts/test-image.sh" sanddune-test-base:bookworm >&2
  docker image inspect "$bench_image" >/dev/null 2>&1 && return
  log "building $bench_image"
  local ctx="$work/fake-claude"
  cp -r "$shared/bench/fake-claude" "$ctx"
  chmod -R u+w "$ctx"
  if [ -n "$sd" ]; then
    (cd "$ctx" && "$sd" docker build-image --image-name "$bench_image" --dockerfile Dockerfile >&2)
  else
    DOCKER_BUILDKIT=0 docker build -q -t "$bench_image" --build-arg AGENT_UID="$(id -u)" --build-arg AGENT_GID="$(id -g)" "$ctx" >&2
  fi
}

# make_repo DIR: the baseline's 50-file repo with one commit.
make_repo() {
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

# Config blocks for the workload.
bench_providers() { # the sandboxes, the agent and run a (1 iteration, head)
  cat <<HCL
sandbox "docker" "bench1" {
  image = "$bench_image"
  env   = { FAKE_CLAUDE_COMPLETE_AT = "1" }
}
sandbox "docker" "bench5" {
  image = "$bench_image"
  env   = { FAKE_CLAUDE_COMPLETE_AT = "5" }
}
agent "claude" "fake" {
  model = "claude-opus-4-8"
  env   = { ANTHROPIC_API_KEY = "fake-key-for-the-fake-cli" }
}
run "a" {
  sandbox = sandbox.docker.bench1
  agent   = agent.claude.fake
  prompt  = "$bench_prompt"
}
HCL
}
bench_run_b() { # 5 iterations, merge-to-head
  cat <<HCL
run "b" {
  sandbox         = sandbox.docker.bench5
  agent           = agent.claude.fake
  prompt          = "$bench_prompt"
  max_iterations  = 5
  branch_strategy = { type = "merge-to-head" }
}
HCL
}
bench_run_c() { # N: runs c1..cN, branch strategy
  local i
  for ((i = 1; i <= $1; i++)); do
    cat <<HCL
run "c$i" {
  sandbox         = sandbox.docker.bench1
  agent           = agent.claude.fake
  prompt          = "$bench_prompt"
  branch_strategy = { type = "branch", branch = "bench/c$i" }
}
HCL
  done
}
# bench_egress: copies a config, giving sandbox bench1 an egress policy (the
# fake agent needs no network; the policy's cost is the enforcer's start).
bench_egress() {
  awk '{ print } /^sandbox "docker" "bench1"/ { print "  egress {\n    allow = [\"example.test\"]\n    agent = false\n  }" }'
}
# stats: reads numbers, one a line; prints "median min max".
stats() {
  sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}

# ---- interleaved rounds (floor.sh, podman-run.sh) ----
# Figures go to $data, one a line: "scenario side round seconds load".
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s%N; }
record() { echo "$1 $2 $3 $(awk -v ns="$4" 'BEGIN { printf "%.4f", ns / 1e9 }') $(load1)" >>"$data"; }

# bench_rounds ROUNDS "SCENARIOS" SIDE_FN SIDE...: every round runs, for
# each scenario, SIDE_FN SCENARIO SIDE ROUND for every side back to back,
# in reverse order every other round, so all sides see the same load.
bench_rounds() {
  local rounds="$1" scenarios="$2" fn="$3" r sc i
  shift 3
  local sides=("$@") order
  for ((r = 1; r <= rounds; r++)); do
    for sc in $scenarios; do
      log "round $r/$rounds: $sc (load $(load1))"
      order=("${sides[@]}")
      if ((r % 2 == 0)); then
        order=()
        for ((i = ${#sides[@]} - 1; i >= 0; i--)); do order+=("${sides[i]}"); done
      fi
      for s in "${order[@]}"; do "$fn" "$sc" "$s" "$r"; done
    done
  done
}

# ratio_row SCENARIO BASE-SIDE OTHER-SIDE LABEL [GOAL]: a report row, the
# two sides' seconds and their ratio per round (other / base), each as
# median (min–max), and the load range; nothing when the scenario did not
# run.
ratio_row() {
  local sc="$1" a="$2" b="$3" label="$4" goal="${5:-}" ta tb ratio loads
  awk -v s="$sc" -v a="$a" -v b="$b" '$1 == s && ($2 == a || $2 == b) { n++ } END { exit !n }' "$data" || return 0
  ta=$(awk -v s="$sc" -v w="$a" '$1 == s && $2 == w { print $4 }' "$data" | stats)
  tb=$(awk -v s="$sc" -v w="$b" '$1 == s && $2 == w { print $4 }' "$data" | stats)
  ratio=$(awk -v s="$sc" -v a="$a" -v b="$b" '$1 == s && $2 == a { x[$3] = $4 } $1 == s && $2 == b { y[$3] = $4 }
    END { for (r in x) if (r in y) print y[r] / x[r] }' "$data" | stats)
  loads=$(awk -v s="$sc" '$1 == s { print $5 }' "$data" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "–" hi }')
  set -- $ta; local fa="$1 ($2–$3)"
  set -- $tb; local fb="$1 ($2–$3)"
  set -- $ratio
  echo "| $label | $fa | $fb | **$1** ($2–$3) |${goal:+ $goal |} $loads |"
}
