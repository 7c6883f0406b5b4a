#!/usr/bin/env bash
# Regenerates the plugin protocol's Go code under sdk/internal/pluginpb from
# the public definition sdk/proto/sanddune/plugin/v1/plugin.proto.
# Needs protoc (Debian: protobuf-compiler); installs the pinned Go plugins.
# With a directory argument, writes the tree there instead (make check).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.}"

PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin go install "$PROTOC_GEN_GO"
GOBIN=$bin go install "$PROTOC_GEN_GO_GRPC"

PATH=$bin:$PATH protoc \
  --proto_path=sdk/proto \
  --go_out="$out" --go_opt=module=github.com/missingstudio/sanddune \
  --go-grpc_out="$out" --go-grpc_opt=module=github.com/missingstudio/sanddune \
  sanddune/plugin/v1/plugin.proto
