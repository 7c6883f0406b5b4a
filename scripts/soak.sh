#!/usr/bin/env bash
# make soak: run the whole test suite ROUNDS times in a row (default 3) while
# another sanddune run keeps using the same Docker daemon, as on a machine
# shared with other work. The other run is a loop of real
# `sanddune run`s on docker in a repo of its own; each round's verdict and
# the loop's run count are printed, and the loop's failures are shown.
# Exit 1 when a round failed, the loop failed, or it left a container.
set -uo pipefail

rounds=${1:-3}
image=${SANDDUNE_TEST_IMAGE:-sanddune-test-base:bookworm}
work=$(mktemp -d /tmp/sanddune-soak.XXXXXX)
loop_pid=
cleanup() {
  [ -n "$loop_pid" ] && kill "$loop_pid" 2>/dev/null && wait "$loop_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] && { bash scripts/ci-setup.sh || exit 1; }
go build -o "$work/bin/" ./cmd/... || exit 1

repo=$work/repo
git -C "$work" init -q -b main repo
git -C "$repo" -c user.name=s -c user.email=s@example.com commit -q --allow-empty -m init
mkdir "$repo/.sanddune"
cat >"$repo/.sanddune/sanddune.hcl" <<HCL
sandbox "docker" "s" {
  image = "$image"
}
agent "command" "a" {
  command = ["sh", "-c", "cat >/dev/null; date +%s%N > f && git add f && git -c user.name=a -c user.email=a@example.com commit -qm soak && sleep 2 && echo '<promise>COMPLETE</promise>'"]
}
run "soak" {
  prompt          = "soak"
  branch_strategy = { type = "branch", branch = "soak" }
}
HCL

# The other run: one sanddune run after another until the rounds are done
# (the stop file ends the loop after its current run, which is waited for).
(
  n=0
  while [ ! -e "$work/stop" ]; do
    n=$((n + 1))
    if ! (cd "$repo" && "$work/bin/sanddune" run >"$work/loop.out" 2>&1); then
      echo "soak: background run $n failed:" >&2
      tail -5 "$work/loop.out" >&2
      echo fail >>"$work/loop.failed"
    fi
    echo "$n" >"$work/loop.count"
  done
) &
loop_pid=$!

failed=0
for ((r = 1; r <= rounds; r++)); do
  start=$(date +%s)
  # -count=1: every round runs every test anew (go test would replay its cache).
  if GOFLAGS=-count=1 SANDDUNE_REQUIRE_ENGINES=1 make test >"$work/round$r.log" 2>&1; then
    verdict=pass
  else
    verdict=FAIL failed=1
    grep -E '^(--- FAIL|FAIL|panic:)' "$work/round$r.log" | head -20
    cp "$work/round$r.log" "soak-round$r.log" && echo "soak: the round's whole output: soak-round$r.log"
  fi
  echo "soak: round $r/$rounds: $verdict in $(($(date +%s) - start)) s, background runs so far: $(cat "$work/loop.count" 2>/dev/null || echo 0)"
done

touch "$work/stop"
wait "$loop_pid" 2>/dev/null
loop_pid=
loop_failed=$( (cat "$work/loop.failed" 2>/dev/null || true) | wc -l)
left=$(docker ps -aq --filter "label=sanddune.repo=$repo")
[ -n "$left" ] && docker rm -f $left >/dev/null
echo "soak: $rounds rounds, $( [ $failed = 0 ] && echo all passed || echo some FAILED ); background: $(cat "$work/loop.count" 2>/dev/null || echo 0) runs, $loop_failed failed, containers left: ${left:-none}"
[ "$failed" = 0 ] && [ -z "$left" ]
