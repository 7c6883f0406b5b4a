#!/usr/bin/env bash
# Regenerates the plugin protocol's Go code under sdk/internal/pluginpb.
# Needs protoc (Debian: protobuf-compiler); installs the pinned Go plugins.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin go install "$PROTOC_GEN_GO"
GOBIN=$bin go install "$PROTOC_GEN_GO_GRPC"

PATH=$bin:$PATH protoc \
  --proto_path=sdk/internal/pluginpb \
  --go_out=sdk/internal/pluginpb --go_opt=paths=source_relative \
  --go-grpc_out=sdk/internal/pluginpb --go-grpc_opt=paths=source_relative \
  plugin.proto
