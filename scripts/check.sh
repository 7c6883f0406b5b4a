#!/usr/bin/env bash
# Static checks (make check; CI runs them before the tests): gofmt, go vet
# and staticcheck (staticcheck.conf) on every Go module, and the generated
# protocol code under sdk/internal/pluginpb matching sdk/proto (make proto
# into a temporary directory). Reports every failure, then exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

# Staticcheck 2026.2.2, the first release line that supports Go 1.26 and
# 1.27 code; go run builds it once into the Go build cache.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
MODULES=(. sdk examples scripts/release)
# The real-cluster and real-agent-CLI tests build only with these tags
# (make e2e-k8s, make agents-e2e): check them too.
TAGS=e2ek8s,agentse2e

status=0
failed() { echo "check: $*" >&2; status=1; }

echo "== gofmt"
unformatted=$(git ls-files -co --exclude-standard -- '*.go' | xargs gofmt -l)
[ -z "$unformatted" ] || failed "not gofmt-ed (run gofmt -w):"$'\n'"$unformatted"

for m in "${MODULES[@]}"; do
  echo "== $m: go vet, staticcheck"
  (cd "$m" && go vet -tags "$TAGS" ./...) || failed "go vet failed in $m"
  (cd "$m" && go run "$STATICCHECK" -tags "$TAGS" ./...) || failed "staticcheck failed in $m"
done

echo "== generated protocol code"
if ! command -v protoc >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends protobuf-compiler >/dev/null 2>&1 ||
    { apt-get update >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends protobuf-compiler >/dev/null; }
fi
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
# The protoc version in the headers is not part of the code: another
# protoc that generates the same code passes.
if ! bash scripts/genproto.sh "$gen"; then
  failed "make proto failed"
elif ! diff -r -u -I '^//.*protoc  *v[0-9]' sdk/internal/pluginpb "$gen/sdk/internal/pluginpb"; then
  failed "sdk/internal/pluginpb differs from what make proto generates from sdk/proto: run make proto"
fi

exit $status
