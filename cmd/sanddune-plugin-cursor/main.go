// Command sanddune-plugin-cursor serves sanddune's built-in cursor agent. It
// is installed beside sanddune, which starts it like any plugin binary (ADR
// 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/cursor"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"cursor": cursor.New()}})
}
