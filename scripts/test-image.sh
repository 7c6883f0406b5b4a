#!/usr/bin/env bash
# Builds a small local base image without any registry: debootstrap minbase
# (Debian bookworm) plus git and ca-certificates, imported with `docker import`.
# Reuses the image when it already exists (pass --force to rebuild).
#
#   scripts/test-image.sh [--force] [NAME]     (default sanddune-test-base:bookworm)
#
# Extra names may be given with SANDDUNE_TEST_IMAGE_TAGS="a:b c:d" (tagged too).
set -euo pipefail

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
name="${1:-sanddune-test-base:bookworm}"
suite="${SANDDUNE_TEST_IMAGE_SUITE:-bookworm}"

tag_extra() {
  for t in ${SANDDUNE_TEST_IMAGE_TAGS:-}; do docker tag "$name" "$t"; done
}

if [ "$force" = 0 ] && docker image inspect "$name" >/dev/null 2>&1; then
  echo "test-image: $name exists, reusing it"
  tag_extra
  exit 0
fi

command -v debootstrap >/dev/null || { echo "test-image: debootstrap is not installed" >&2; exit 1; }

root="$(mktemp -d /tmp/sanddune-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "test-image: debootstrap $suite into $root"
if ! debootstrap --variant=minbase --include=git,ca-certificates "$suite" "$root" >"$root.log" 2>&1; then
  tail -n 30 "$root.log" >&2
  rm -f "$root.log"
  echo "test-image: debootstrap failed" >&2
  exit 1
fi
rm -f "$root.log"
# Keep the image small: package caches and docs are not needed.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
mkdir -p "$root/home/agent"
chmod 1777 "$root/home/agent"

echo "test-image: importing $name"
tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  - "$name" >/dev/null
tag_extra
echo "test-image: built $name"
