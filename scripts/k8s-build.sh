#!/usr/bin/env bash
# Builds kube-apiserver, kubelet (k8s.io/kubernetes) and etcd from the Go module proxy into a
# cache keyed by version, so k8s-up.sh starts a real single-node cluster in seconds.
# Recipe: a kubernetes module zip has no staging/ or vendor/: drop its replace block and pin the
# published staging modules at the matching v0.x version.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.4}"
CACHE="${SANDDUNE_K8S_CACHE:-$HOME/.cache/sanddune/k8s}"
BIN="$CACHE/$K8S_VERSION-etcd$ETCD_VERSION"

if [[ -x "$BIN/kube-apiserver" && -x "$BIN/kubelet" && -x "$BIN/etcd" ]]; then
  echo "$BIN"
  exit 0
fi

export GOFLAGS=-mod=mod
work="$(mktemp -d "${TMPDIR:-/tmp}/sanddune-k8s-build.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$BIN.partial"

go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
cp -r "$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION" "$work/src"
chmod -R u+w "$work/src"
rm -f "$work/src/go.work" "$work/src/go.work.sum"
staging="v0.${K8S_VERSION#v1.}"
python3 - "$work/src/go.mod" "$staging" <<'PY'
import re, sys
path, staging = sys.argv[1], sys.argv[2]
s = open(path).read()
s = re.sub(r'\nreplace \((.|\n)*?\n\)\n', '\n', s)
s = re.sub(r'(\tk8s\.io/[a-z0-9-]+) v0\.0\.0\n', r'\1 ' + staging + r'\n', s)
open(path, 'w').write(s)
PY
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
(cd "$work/src" && go mod download && go build -trimpath \
  -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
  -o "$BIN.partial/" ./cmd/kube-apiserver ./cmd/kubelet)

mkdir -p "$work/etcd"
cat >"$work/etcd/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
(cd "$work/etcd" && go mod init sanddune-etcd >/dev/null 2>&1 && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 &&
  go build -trimpath -ldflags "-s -w" -o "$BIN.partial/etcd" .)

rm -rf "$BIN" && mv "$BIN.partial" "$BIN"
echo "$BIN"
