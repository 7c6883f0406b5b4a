// Command sanddune-plugin-kubernetes serves sanddune's built-in kubernetes sandbox. It is
// installed beside sanddune, which starts it like any plugin binary (ADR 0022: sanddune
// serves the other built-ins itself, ADR 0030; client-go keeps this one apart).
package main

import (
	"github.com/missingstudio/sanddune/plugins/kubernetes"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"kubernetes": kubernetes.New()}})
}
