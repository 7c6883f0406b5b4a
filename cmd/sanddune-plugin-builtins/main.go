// Command sanddune-plugin-builtins serves sanddune's built-in sandboxes and
// agents, all but kubernetes (whose client-go gets a binary of its own,
// cmd/sanddune-plugin-kubernetes). It is installed beside sanddune, which
// starts it once and dispenses every built-in from it (ADR 0022).
//
// A provider added here is a built-in once cmd/sanddune/builtins.go names
// it too (TestBuiltinsBinaryServesTheBuiltins checks that they agree).
package main

import (
	"github.com/missingstudio/sanddune/plugins/bubblewrap"
	"github.com/missingstudio/sanddune/plugins/claude"
	"github.com/missingstudio/sanddune/plugins/codex"
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/copilot"
	"github.com/missingstudio/sanddune/plugins/cursor"
	"github.com/missingstudio/sanddune/plugins/docker"
	"github.com/missingstudio/sanddune/plugins/gemini"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/plugins/opencode"
	"github.com/missingstudio/sanddune/plugins/pi"
	"github.com/missingstudio/sanddune/plugins/podman"
	"github.com/missingstudio/sanddune/plugins/vercel"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{
		Sandboxes: map[string]sdk.SandboxProvider{
			"bubblewrap": bubblewrap.New(),
			"docker":     docker.New(),
			"local":      local.New(),
			"podman":     podman.New(),
			"vercel":     vercel.New(),
		},
		Agents: map[string]sdk.AgentProvider{
			"claude":   claude.New(),
			"codex":    codex.New(),
			"command":  command.New(),
			"copilot":  copilot.New(),
			"cursor":   cursor.New(),
			"gemini":   gemini.New(),
			"opencode": opencode.New(),
			"pi":       pi.New(),
		},
	})
}
