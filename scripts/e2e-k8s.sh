#!/usr/bin/env bash
# The kubernetes sandbox's e2e suite against a real single-node cluster
# (scripts/k8s-up.sh; the kube binaries are built once, ~4 min on 2 idle
# cores, then cached in ~/.cache/sanddune/k8s): the conformance kit and
# `sanddune run` (strategies, SIGINT, gc of a killed run, egress), twice: as
# cluster admin, and as a user bound only to plugins/kubernetes/rbac.yaml's
# Role (so the Role is known to be enough). Needs root.
# A cluster already started with k8s-up.sh is reused and left running;
# otherwise the one started here is stopped at the end.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
R="${SANDDUNE_K8S_DIR:-/tmp/sanddune-k8s}"
if [ ! -f "$R/pids" ]; then
  trap 'scripts/k8s-down.sh' EXIT
fi
eval "$(scripts/k8s-up.sh)"
export SANDDUNE_K8S_E2E=1 SANDDUNE_REQUIRE_ENGINES=1
suite() { go test -count=1 -timeout 30m -tags e2ek8s -run 'RealCluster|Kubernetes' ./plugins/kubernetes/ ./cmd/sanddune/; }
echo "e2e-k8s: as admin (system:masters)" >&2
suite
echo "e2e-k8s: as sanddune-runner (only rbac.yaml's Role, namespace agents)" >&2
KUBECONFIG="$SANDDUNE_K8S_RUNNER_KUBECONFIG" suite
