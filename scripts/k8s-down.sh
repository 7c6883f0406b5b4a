#!/usr/bin/env bash
# Stops the cluster k8s-up.sh started (by the PIDs it recorded) and removes
# its state, mounts, bridge and runc state.
set -uo pipefail
R="${SANDDUNE_K8S_DIR:-/tmp/sanddune-k8s}"
[ -f "$R/pids" ] || { echo "k8s-down: nothing running in $R" >&2; exit 0; }
# Pods first, so that CNI removes their veths and iptables rules.
for name in kubelet kube-apiserver containerd etcd; do
  pid=$(awk -v n="$name" '$1 == n {print $2}' "$R/pids")
  [ -n "$pid" ] || continue
  if [ "$name" = containerd ]; then
    for t in $(ctr --address "$R/containerd/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr --address "$R/containerd/containerd.sock" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1
    done
  fi
  kill "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
done
# containerd shims of this instance (their command line names our state dir).
for p in $(pgrep -f "containerd-shim.*-address $R/" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
grep -o " $R/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
ip link del sdk8s0 2>/dev/null
rm -rf "$R"
echo "k8s-down: stopped" >&2
