package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/missingstudio/sanddune/plugins/bubblewrap"
	"github.com/missingstudio/sanddune/plugins/claude"
	"github.com/missingstudio/sanddune/plugins/codex"
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/docker"
	"github.com/missingstudio/sanddune/plugins/kubernetes"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/plugins/opencode"
	"github.com/missingstudio/sanddune/plugins/pi"
	"github.com/missingstudio/sanddune/plugins/podman"
	"github.com/missingstudio/sanddune/plugins/vercel"
	"github.com/missingstudio/sanddune/sdk"
)

// serveCommand is the hidden argument that turns sanddune into one of its
// built-in plugins: `sanddune __plugin-serve <name>`. The host re-executes
// itself this way, so built-ins speak the same protocol as third-party
// plugin binaries.
const serveCommand = "__plugin-serve"

// builtins maps a built-in plugin's name to what it serves.
var builtins = map[string]func() sdk.ServeOpts{
	"local":      sandbox("local", local.New),
	"docker":     sandbox("docker", docker.New),
	"podman":     sandbox("podman", podman.New),
	"bubblewrap": sandbox("bubblewrap", bubblewrap.New),
	"vercel":     sandbox("vercel", vercel.New),
	"kubernetes": sandbox("kubernetes", kubernetes.New),
	"command":    agent("command", command.New),
	"claude":     agent("claude", claude.New),
	"codex":      agent("codex", codex.New),
	"opencode":   agent("opencode", opencode.New),
	"pi":         agent("pi", pi.New),
}

func sandbox(name string, New func() sdk.SandboxProvider) func() sdk.ServeOpts {
	return func() sdk.ServeOpts { return sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{name: New()}} }
}

func agent(name string, New func() sdk.AgentProvider) func() sdk.ServeOpts {
	return func() sdk.ServeOpts { return sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{name: New()}} }
}

func builtinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func servePlugin(name string) int {
	opts, ok := builtins[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "sanddune: no built-in plugin %q\n", name)
		return exitUsage
	}
	sdk.Serve(opts())
	return exitOK
}
