package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
)

// serveCommand is the hidden argument that turns sanddune into one of its
// built-in plugins: `sanddune __plugin-serve <name>`. The host re-executes
// itself this way, so built-ins speak the same protocol as third-party
// plugin binaries.
const serveCommand = "__plugin-serve"

// builtins maps a built-in plugin's name to what it serves.
var builtins = map[string]func() sdk.ServeOpts{
	"local": func() sdk.ServeOpts {
		return sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"local": local.New()}}
	},
	"command": func() sdk.ServeOpts {
		return sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"command": command.New()}}
	},
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
