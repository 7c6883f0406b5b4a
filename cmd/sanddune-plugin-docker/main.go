// Command sanddune-plugin-docker serves sanddune's built-in docker sandbox. It is
// installed beside sanddune, which starts it like any plugin binary (ADR 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/docker"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"docker": docker.New()}})
}
