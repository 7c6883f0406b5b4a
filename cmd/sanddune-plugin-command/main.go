// Command sanddune-plugin-command serves sanddune's built-in command agent. It is
// installed beside sanddune, which starts it like any plugin binary (ADR 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"command": command.New()}})
}
