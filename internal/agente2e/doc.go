// Package agente2e runs the real agent CLIs (Claude Code, Codex, pi,
// opencode, Gemini CLI, Copilot) through sanddune in a bubblewrap sandbox
// (every case) and in a docker container (TestDocker: a commit run each),
// against scripted model servers on this machine (the docker bridge's
// address, else 127.0.0.1). Its tests need the build tag agentse2e and the
// CLIs on PATH; scripts/agents-e2e.sh installs them (make agents-e2e).
package agente2e
