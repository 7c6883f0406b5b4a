// Command sanddune-plugin-vercel serves sanddune's built-in vercel sandbox. It is
// installed beside sanddune, which starts it like any plugin binary (ADR 0019).
package main

import (
	"github.com/missingstudio/sanddune/plugins/vercel"
	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	sdk.Serve(sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"vercel": vercel.New()}})
}
