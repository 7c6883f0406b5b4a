// Command sanddune-plugin-copilot serves sanddune's built-in copilot agent.
// It is installed beside sanddune, which starts it like any plugin binary
// (ADR 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/copilot"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"copilot": copilot.New()}})
}
