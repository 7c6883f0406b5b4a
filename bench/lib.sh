# Shared by the bench scripts (sourced): the workload of
# shared/reference/baseline-predecessor.md. Expects $root, $shared, $work.

bench_image="sanddune-bench:latest"
bench_prompt="Append one line to fake-claude.log and commit it. When the task is done, reply with <promise>COMPLETE</promise>."

log() { echo "bench: $*" >&2; }

# find_sanddune: $SANDDUNE_BIN, else PATH, else a fresh build into $work.
find_sanddune() {
  local s="${SANDDUNE_BIN:-$(command -v sanddune || true)}"
  if [ -z "$s" ]; then
    log "building sanddune"
    (cd "$root" && go build -o "$work/sanddune" ./cmd/sanddune) && s="$work/sanddune"
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
# stats: reads numbers, one a line; prints "median min max".
stats() {
  sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}
