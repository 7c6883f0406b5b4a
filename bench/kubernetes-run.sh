#!/usr/bin/env bash
# 20 concurrent 1-iteration runs on the kubernetes sandbox provider against
# a real cluster, with max_concurrent below 20, next to the same 20 runs on
# the local provider. Each run's agent commits one file; every timed round is
# checked (20 commits on 20 branches, no sandbox pod left) and the script
# fails otherwise. Prints a markdown table.
#
#   eval "$(scripts/k8s-up.sh)"; bench/kubernetes-run.sh [-n ROUNDS] [-c "5 10 20"]
#
# sanddune comes from $SANDDUNE_BIN, else is built into a temp dir.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=3 limits="5 10" runs=20
while getopts "n:c:" opt; do
  case "$opt" in
    n) rounds="$OPTARG" ;;
    c) limits="$OPTARG" ;;
    *) echo "usage: $0 [-n ROUNDS] [-c LIMITS]" >&2; exit 2 ;;
  esac
done
[ -n "${KUBECONFIG:-}" ] || { echo "bench: KUBECONFIG is not set (eval \"\$(scripts/k8s-up.sh)\")" >&2; exit 1; }
image="${SANDDUNE_K8S_IMAGE:-sanddune-test-base:bookworm}"
node="${SANDDUNE_K8S_NODE:-}"
work="$(mktemp -d /tmp/sanddune-k8s-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
sanddune="${SANDDUNE_BIN:-}"
if [ -z "$sanddune" ]; then
  (cd "$root" && go build -o "$work/" ./cmd/...) # sanddune and its built-in plugins
  sanddune="$work/sanddune"
fi

# config SANDBOX_BLOCK: writes a repo with 20 branch runs.
setup() {
  local dir="$work/repo-$1"
  rm -rf "$dir" && mkdir -p "$dir/.sanddune"
  git -C "$dir" init -q -b main
  git -C "$dir" -c user.name=b -c user.email=b@example.com commit -q --allow-empty -m init
  {
    echo "$2"
    echo 'agent "command" "commit" {
  command = ["sh", "-c", "cat > out.txt && git add out.txt && git -c user.name=a -c user.email=a@example.com commit -qm agent"]
}'
    for i in $(seq "$runs"); do
      printf 'run "r%d" {\n  prompt = "run %d"\n  max_iterations = 1\n  branch_strategy = { type = "branch", branch = "bench/r%d" }\n}\n' "$i" "$i" "$i"
    done
  } >"$dir/.sanddune/sanddune.hcl"
  echo "$dir"
}

names() { for i in $(seq "$runs"); do printf 'r%d ' "$i"; done; }

# time_round DIR: runs the 20 runs with -p 20, checks, prints the seconds
# and how many runs said they were queued (max_concurrent).
time_round() {
  local dir=$1 start end
  for i in $(seq "$runs"); do git -C "$dir" branch -D "bench/r$i" >/dev/null 2>&1 || true; done
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  (cd "$dir" && "$sanddune" run -p "$runs" $(names) >"$work/out.log" 2>&1) || { tail -n 30 "$work/out.log" >&2; exit 1; }
  end=$(date +%s.%N)
  for i in $(seq "$runs"); do
    [ "$(git -C "$dir" rev-list --count "main..bench/r$i")" = 1 ] || { echo "bench: run r$i landed no commit" >&2; exit 1; }
  done
  left=$(pods_left)
  [ "$left" = 0 ] || { echo "bench: $left sandbox pods left after a round" >&2; exit 1; }
  echo "$(echo "$end - $start" | bc) $(grep -c 'waiting: queued behind' "$work/out.log" || true)"
}

# pods_left counts sandbox pods not being deleted (k8s-up.sh's kubeconfig).
pods_left() {
  local server tok
  server=$(sed -n 's/.*server: "\([^"]*\)".*/\1/p' "$KUBECONFIG")
  tok=$(sed -n 's/.*token: "\([^"]*\)".*/\1/p' "$KUBECONFIG")
  curl -sk -H "Authorization: Bearer $tok" "$server/api/v1/pods?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dsanddune" |
    python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["items"] if "deletionTimestamp" not in p["metadata"]))'
}

# summary LABEL LIMIT TIMES...: min / median / max of a configuration.
summary() {
  local label=$1 limit=$2; shift 2
  printf '%s\n' "$@" | sort -n | awk -v l="$label" -v c="$limit" '{t[NR]=$1} END {
    m = (NR % 2) ? t[(NR+1)/2] : (t[NR/2] + t[NR/2+1]) / 2
    printf "| %s | %s | %d | %.1f | %.1f | %.1f |\n", l, c, NR, t[1], m, t[NR]}' >>"$work/summary"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| sandbox | max_concurrent | round | 20 runs wall (s) | runs queued |\n|---|---|---|---|---|\n'
: >"$work/summary"
local_dir=$(setup local 'sandbox "local" "default" {}')
times=()
for r in $(seq "$rounds"); do
  read -r t q < <(time_round "$local_dir" || echo fail)
  [ "$t" != fail ] || exit 1
  times+=("$t")
  printf '| local | - | %d | %.1f | %d |\n' "$r" "$t" "$q"
done
summary local - "${times[@]}"
for c in $limits; do
  block="sandbox \"kubernetes\" \"default\" {
  image = \"$image\"
  image_pull_policy = \"IfNotPresent\"
  max_concurrent = $c
${node:+  node_name = \"$node\"}
}"
  dir=$(setup "k8s-$c" "$block")
  times=()
  for r in $(seq "$rounds"); do
    read -r t q < <(time_round "$dir" || echo fail)
    [ "$t" != fail ] || exit 1
    times+=("$t")
    printf '| kubernetes | %d | %d | %.1f | %d |\n' "$c" "$r" "$t" "$q"
  done
  summary kubernetes "$c" "${times[@]}"
done
echo
printf '| sandbox | max_concurrent | rounds | min (s) | median (s) | max (s) |\n|---|---|---|---|---|---|\n'
cat "$work/summary"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
