package main

import (
	"github.com/missingstudio/sanddune/core/pluginhost"
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

// builtinsBinary is the name sanddune runs as when it serves its own
// built-ins (argv[0]): the plugin host starts sanddune's own executable so
// for them, one process for all (ADR 0030).
const builtinsBinary = pluginhost.BinaryPrefix + "builtins"

// The built-ins sanddune serves itself: every one but kubernetes.
var (
	ownSandboxes = map[string]func() sdk.SandboxProvider{
		"bubblewrap": bubblewrap.New,
		"docker":     docker.New,
		"local":      local.New,
		"podman":     podman.New,
		"vercel":     vercel.New,
	}
	ownAgents = map[string]func() sdk.AgentProvider{
		"claude":   claude.New,
		"codex":    codex.New,
		"command":  command.New,
		"copilot":  copilot.New,
		"cursor":   cursor.New,
		"gemini":   gemini.New,
		"opencode": opencode.New,
		"pi":       pi.New,
	}
)

// builtins are the plugins that come with sanddune, each mapped to the
// binary that serves it: builtinsBinary (sanddune itself) or one
// installed beside sanddune.
var builtins = func() map[string]string {
	m := map[string]string{
		// client-go makes it twice the size of all the others together: its
		// own binary (cmd/sanddune-plugin-kubernetes) keeps it out of every
		// other run.
		"kubernetes": pluginhost.BinaryPrefix + "kubernetes",
	}
	for name := range ownSandboxes {
		m[name] = builtinsBinary
	}
	for name := range ownAgents {
		m[name] = builtinsBinary
	}
	return m
}()

// serveBuiltins serves sanddune's own built-ins to the host that started
// it; it returns when the host is done.
func serveBuiltins() {
	opts := sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{}, Agents: map[string]sdk.AgentProvider{}}
	for name, p := range ownSandboxes {
		opts.Sandboxes[name] = p()
	}
	for name, p := range ownAgents {
		opts.Agents[name] = p()
	}
	sdk.Serve(opts)
}
