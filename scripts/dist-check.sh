#!/usr/bin/env bash
# Builds the release archives twice from this checkout, the second time
# with an empty build cache, and checks that both SHA256SUMS are the same:
# the archives, binaries and SBOM are a function of the commit alone.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --always --dirty)}
# Fixed once, so a commit made meanwhile changes neither build.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./scripts/release dist -version "$version" -out "$tmp/a" >/dev/null
GOCACHE="$tmp/gocache" go run ./scripts/release dist -version "$version" -out "$tmp/b" >/dev/null
if diff -u "$tmp/a/SHA256SUMS" "$tmp/b/SHA256SUMS"; then
	echo "dist-check: two builds of $version are identical:"
	cat "$tmp/a/SHA256SUMS"
else
	echo "dist-check: the two builds differ (above)" >&2
	exit 1
fi
