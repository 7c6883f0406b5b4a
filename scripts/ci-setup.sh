#!/usr/bin/env bash
# Prepares a Debian machine (as root) for sanddune's test suite: installs the
# engines the tests need when missing, starts dockerd and builds the local
# test image for docker and podman. Idempotent: every step is skipped when
# already done.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "ci-setup: $*"; }

# 1. Debian packages. runc: where crun cannot run (cgroup v1/hybrid hosts),
# podman's preflight and the podman tests switch to it.
declare -A bin_of=([docker.io]=dockerd [bubblewrap]=bwrap [debootstrap]=debootstrap [protobuf-compiler]=protoc [git]=git
  [podman]=podman [catatonit]=catatonit [uidmap]=newuidmap [slirp4netns]=slirp4netns [runc]=runc
  [containerd]=containerd [openssl]=openssl [containernetworking-plugins]=/usr/lib/cni/bridge) # the last three: make e2e-k8s
missing=()
for pkg in "${!bin_of[@]}"; do
  command -v "${bin_of[$pkg]}" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "${bin_of[$pkg]}" >/dev/null 2>&1 || missing+=("$pkg")
done
# The Python plugin example (examples/python-sandbox) runs on Debian's own
# Python and its grpc, protobuf and cryptography packages (no PyPI).
if ! /usr/bin/python3 -c 'import grpc, google.protobuf, cryptography' >/dev/null 2>&1; then
  missing+=(python3 python3-grpcio python3-protobuf python3-cryptography)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/ci-setup-apt.log 2>&1; then
    apt-get update >>/tmp/ci-setup-apt.log 2>&1
    apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/ci-setup-apt.log 2>&1 || {
      tail -n 30 /tmp/ci-setup-apt.log >&2; echo "ci-setup: apt-get install failed" >&2; exit 1; }
  fi
fi
export PATH="$PATH:/usr/sbin:/sbin"

# 2. dockerd.
if ! docker info >/dev/null 2>&1; then
  if ! pgrep -x dockerd >/dev/null; then
    log "starting dockerd (log: /tmp/dockerd.log)"
    # In a session of its own: a signal to the caller's process group
    # (Ctrl-C, a test harness stopping its group) does not reach it.
    setsid nohup dockerd </dev/null >/tmp/dockerd.log 2>&1 &
  fi
  deadline=$((SECONDS + ${SANDDUNE_DOCKERD_TIMEOUT:-60}))
  until docker info >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "ci-setup: dockerd did not come up within ${SANDDUNE_DOCKERD_TIMEOUT:-60}s; last lines of /tmp/dockerd.log:" >&2
      tail -n 30 /tmp/dockerd.log >&2 || true
      exit 1
    fi
    sleep 0.5
  done
fi
log "docker $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"

# 3. Test image (debootstrap + docker import, no registry).
"$here/test-image.sh" sanddune-test-base:bookworm

# 4. Podman (daemonless): the same rootfs, `podman import`ed.
log "$(podman --version)"
"$here/test-image.sh" --engine podman sanddune-test-base:bookworm

# 5. Rootless podman: a test user with subordinate id ranges (useradd adds
# them), its runtime dir, and the test image in its own storage.
ru=sanddune-rootless
if ! id "$ru" >/dev/null 2>&1; then
  log "creating the rootless podman test user $ru"
  useradd -m -s /bin/bash "$ru"
fi
grep -q "^$ru:" /etc/subuid || usermod --add-subuids 100000-165535 --add-subgids 100000-165535 "$ru"
ruid="$(id -u "$ru")"
install -d -m 0700 -o "$ru" -g "$(id -g "$ru")" "/run/user/$ruid"
as_ru() { runuser -u "$ru" -- env -i HOME="$(getent passwd "$ru" | cut -d: -f6)" XDG_RUNTIME_DIR="/run/user/$ruid" PATH=/usr/bin:/bin:/usr/sbin:/sbin "$@"; }
if ! (cd / && as_ru podman image exists sanddune-test-base:bookworm); then
  log "importing sanddune-test-base:bookworm into $ru's podman storage"
  podman save sanddune-test-base:bookworm | (cd / && as_ru podman load -q) >/dev/null
fi
