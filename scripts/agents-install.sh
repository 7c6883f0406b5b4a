#!/usr/bin/env bash
# Installs Claude Code, Codex, opencode, pi, Gemini CLI and the Copilot CLI from
# the npm registry at the pinned versions the agent plugins are checked against,
# once: they are cached under $SANDDUNE_AGENTS_COMPAT_DIR (default
# ~/.cache/sanddune/agents-compat). Prints the directory holding the CLIs.
# Run by agents-compat.sh and agents-e2e.sh; needs node and npm.
set -euo pipefail

CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.169.0
OPENCODE_VERSION=1.18.33
PI_VERSION=0.73.1
COPILOT_VERSION=1.0.102
GEMINI_VERSION=0.61.0

cache="${SANDDUNE_AGENTS_COMPAT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sanddune/agents-compat}"
prefix="$cache/claude-$CLAUDE_VERSION.codex-$CODEX_VERSION.opencode-$OPENCODE_VERSION.pi-$PI_VERSION.copilot-$COPILOT_VERSION.gemini-$GEMINI_VERSION"
bin="$prefix/node_modules/.bin"
if [ ! -x "$bin/claude" ] || [ ! -x "$bin/codex" ] || [ ! -x "$bin/opencode" ] || [ ! -x "$bin/pi" ] \
  || [ ! -x "$bin/copilot" ] || [ ! -x "$bin/gemini" ]; then
  echo "agents-install: installing the CLIs into $prefix" >&2
  rm -rf "$prefix.tmp"
  mkdir -p "$prefix.tmp"
  npm install --prefix "$prefix.tmp" --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" \
    "opencode-ai@$OPENCODE_VERSION" "@mariozechner/pi-coding-agent@$PI_VERSION" \
    "@github/copilot@$COPILOT_VERSION" "@google/gemini-cli@$GEMINI_VERSION" >&2
  rm -rf "$prefix"
  mv "$prefix.tmp" "$prefix"
fi
echo "$bin"
