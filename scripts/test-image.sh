#!/usr/bin/env bash
# Builds a small local base image without any registry: debootstrap minbase
# (Debian bookworm) plus git and ca-certificates, imported with `docker
# import` (or `podman import`). Reuses the image when it already exists
# (pass --force to rebuild). For podman, the rootfs of docker's image of the
# same name is reused when docker has it, so both engines run the same
# debootstrap rootfs.
#
#   scripts/test-image.sh [--force] [--engine docker|podman] [NAME]   (default sanddune-test-base:bookworm)
#
# Extra names may be given with SANDDUNE_TEST_IMAGE_TAGS="a:b c:d" (tagged too).
set -euo pipefail

force=0 engine=docker
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1; shift ;;
    --engine) engine="$2"; shift 2 ;;
    *) break ;;
  esac
done
case "$engine" in docker | podman) ;; *) echo "test-image: unknown engine $engine" >&2; exit 2 ;; esac
name="${1:-sanddune-test-base:bookworm}"
suite="${SANDDUNE_TEST_IMAGE_SUITE:-bookworm}"
changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'ENV LANG=C.UTF-8'
  --change 'CMD ["/bin/bash"]')

tag_extra() {
  for t in ${SANDDUNE_TEST_IMAGE_TAGS:-}; do "$engine" tag "$name" "$t"; done
}

if [ "$force" = 0 ] && "$engine" image inspect "$name" >/dev/null 2>&1; then
  echo "test-image: $engine image $name exists, reusing it"
  tag_extra
  exit 0
fi

if [ "$engine" = podman ] && [ "$force" = 0 ] && command -v docker >/dev/null && docker image inspect "$name" >/dev/null 2>&1; then
  echo "test-image: importing docker's $name into podman"
  cid="$(docker create "$name" true)"
  trap 'docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
  docker export "$cid" | podman import "${changes[@]}" - "$name" >/dev/null
  tag_extra
  echo "test-image: built $name ($engine)"
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
# mktemp made the root 0700: the image's / must be searchable by any user
# (rootless podman keeps this mode).
chmod 0755 "$root"

echo "test-image: importing $name ($engine)"
tar -C "$root" -c . | "$engine" import "${changes[@]}" - "$name" >/dev/null
tag_extra
echo "test-image: built $name ($engine)"
