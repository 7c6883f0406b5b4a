#!/usr/bin/env bash
# Installs what `sanddune run` needs at run time on Linux: bubblewrap (the quick-start sandbox)
# and git. Only acts as root and only when something is missing.
set -euo pipefail
missing=()
command -v git >/dev/null || missing+=(git)
command -v bwrap >/dev/null || missing+=(bubblewrap)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "sanddune: please install: ${missing[*]} (e.g. sudo apt-get install -y ${missing[*]})" >&2
	exit 0
fi
if command -v apt-get >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
	echo "sanddune: please install: ${missing[*]}" >&2
fi
