// Command sanddune-plugin-bubblewrap serves sanddune's built-in bubblewrap sandbox. It is
// installed beside sanddune, which starts it like any plugin binary (ADR 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/bubblewrap"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"bubblewrap": bubblewrap.New()}})
}
