// Command sanddune-plugin-gemini serves sanddune's built-in gemini agent. It is
// installed beside sanddune, which starts it like any plugin binary (ADR 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/gemini"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"gemini": gemini.New()}})
}
