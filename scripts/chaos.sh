#!/usr/bin/env bash
# make chaos: interrupt real runs at random moments and check that nothing
# is lost or leaked. Each trial starts `sanddune run` in a fresh
# repo on docker, bubblewrap or local, with a branch or merge-to-head
# strategy, and an agent that commits in a loop; after a random delay it
# sends SIGINT, SIGTERM, SIGHUP, a double Ctrl-C, or SIGKILL followed by
# `sanddune gc`. Then it checks:
#   lost       every commit the agent reported is in a ref of the host repo
#   exit       SIGINT/SIGTERM/SIGHUP/double Ctrl-C exit 130 (0 if the run ended first); gc exits 0
#   leaked     no container labelled with the trial's repo, no process carrying the
#              trial's marker or running this script's sanddune binary, no sandbox dir
#              or sanddune temp dir in the trial's TMPDIR, no lock file
# Usage: scripts/chaos.sh [TRIALS] (default 60); CHAOS_SANDBOXES="local bubblewrap docker",
# CHAOS_SIGNALS="INT TERM HUP INT2 KILL" narrow the draw.
# Exit 1 when any check failed. Not part of CI (a few minutes, real engines).
set -uo pipefail

trials=${1:-60}
sandboxes=(${CHAOS_SANDBOXES:-local bubblewrap docker})
signals=(${CHAOS_SIGNALS:-INT TERM HUP INT2 KILL})
strategies=(branch merge-to-head)
image=${SANDDUNE_TEST_IMAGE:-sanddune-test-base:bookworm}

work=$(mktemp -d /tmp/sanddune-chaos.XXXXXX)
trap 'rm -rf "$work"' EXIT
bin=$work/sanddune
go build -o "$work/" ./cmd/... || exit 1 # sanddune and its built-in plugins

lost=0 leaked=0 badexit=0 finished=0 failed=0
for ((n = 1; n <= trials; n++)); do
  sb=${sandboxes[$((RANDOM % ${#sandboxes[@]}))]}
  sig=${signals[$((RANDOM % ${#signals[@]}))]}
  strat=${strategies[$((RANDOM % ${#strategies[@]}))]}
  delay=$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32768 * 12 }')
  marker="chaos-$$-$n"
  t=$work/$n
  repo=$t/repo tmp=$t/tmp
  mkdir -p "$repo" "$tmp"
  git -C "$repo" init -q -b main
  git -C "$repo" -c user.name=c -c user.email=c@example.com commit -q --allow-empty -m init
  case $sb in
    docker) block="sandbox \"docker\" \"s\" {
  image = \"$image\"
}" ;;
    *) block="sandbox \"$sb\" \"s\" {}" ;;
  esac
  branch=""
  [ "$strat" = branch ] && branch=", branch = \"chaos/$n\""
  mkdir -p "$repo/.sanddune"
  cat >"$repo/.sanddune/sanddune.hcl" <<EOF
$block
agent "command" "loop" {
  command = ["sh", "-c", "cat >/dev/null; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo \$i > f\$i && git add f\$i && git -c user.name=a -c user.email=a@example.com commit -qm c\$i && echo committed \$(git rev-parse HEAD); sleep 0.2; done; echo '<promise>COMPLETE</promise>'"]
}
run "chaos" {
  prompt          = "loop"
  branch_strategy = { type = "$strat"$branch }
  env             = { CHAOS_MARKER = "$marker" }
  logging {
    type = "stdout"
  }
}
EOF
  (cd "$repo" && exec env TMPDIR="$tmp" setsid "$bin" run >"$t/out" 2>"$t/err") &
  pid=$!
  sleep "$delay"
  case $sig in
    INT2) kill -INT "$pid" 2>/dev/null; sleep 0.05; kill -INT "$pid" 2>/dev/null ;;
    *) kill -"$sig" "$pid" 2>/dev/null ;;
  esac
  wait "$pid"
  code=$?
  verdict=ok
  if [ "$sig" = KILL ]; then
    (cd "$repo" && TMPDIR="$tmp" "$bin" gc >"$t/gc" 2>&1) || { verdict="gc exit $?"; badexit=$((badexit + 1)); }
  elif [ "$code" = 0 ]; then
    finished=$((finished + 1))
  elif [ "$code" != 130 ]; then
    verdict="exit $code"; badexit=$((badexit + 1))
  fi
  sleep 0.5 # what a killed process's children need to die
  for sha in $(grep -o 'committed [0-9a-f]\{40\}' "$t/out" | cut -d' ' -f2); do
    if [ -z "$(git -C "$repo" for-each-ref --contains "$sha" 2>/dev/null)" ]; then
      verdict="$verdict; lost $sha"; lost=$((lost + 1))
    fi
  done
  left=""
  if [ "$sb" = docker ]; then
    c=$(docker ps -aq --filter "label=sanddune.repo=$repo")
    [ -n "$c" ] && { left="$left containers:$c"; docker rm -f $c >/dev/null; }
  fi
  for p in $({ grep -lsz "^CHAOS_MARKER=$marker\$" /proc/[0-9]*/environ; find /proc/[0-9]*/exe -maxdepth 0 -lname "$bin" 2>/dev/null; } | cut -d/ -f3 | sort -u); do
    left="$left pid:$p($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-60))"
    kill -9 "$p" 2>/dev/null
  done
  t_left=$(ls -A "$tmp")
  [ -n "$t_left" ] && left="$left tmp:$(echo $t_left)"
  locks=$(ls -A "$repo/.git/sanddune/locks" 2>/dev/null | grep -v '^\.admin$')
  [ -n "$locks" ] && left="$left locks:$(echo $locks)"
  if [ -n "$left" ]; then
    verdict="$verdict; leaked$left"; leaked=$((leaked + 1))
  fi
  [ "$verdict" = ok ] || failed=$((failed + 1))
  printf '%3d %-10s %-13s %-4s after %ss: exit %s, %d commits: %s\n' "$n" "$sb" "$strat" "$sig" "$delay" "$code" \
    "$(grep -c 'committed [0-9a-f]\{40\}' "$t/out")" "$verdict"
  [ "$verdict" = ok ] || { sed 's/^/      /' "$t/err" | tail -5; }
  rm -rf "$t"
done
echo "chaos: $trials trials ($(echo "${sandboxes[@]}")): $lost lost commits, $leaked trials leaked, $badexit unexpected exits, $finished finished before the signal"
[ "$failed" = 0 ]
