#!/usr/bin/env bash
# Runs the real agent CLIs end to end: `sanddune run` in a bubblewrap
# sandbox and in a docker container with Claude Code, Codex, pi, opencode,
# Gemini CLI and the Copilot CLI (pinned versions, from npm, cached by
# agents-install.sh) against scripted model servers on this machine
# (internal/agente2e). No model outside this machine is contacted. Needs go,
# node, npm, git, bwrap, and docker with the test image (scripts/ci-setup.sh).
# Extra arguments go to go test (e.g. -run TestClaude).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
start=$(date +%s)
bin="$(bash "$here/agents-install.sh")"
echo "agents-e2e: CLIs ready ($(( $(date +%s) - start ))s)"

cd "$here/.."
PATH="$bin:$PATH" go test -tags agentse2e -count=1 -timeout 30m "$@" ./internal/agente2e/
echo "agents-e2e: passed in $(( $(date +%s) - start ))s"
