// Command sanddune-plugin-tmpdir is an example third-party sanddune plugin,
// written only against the public sdk package. It serves one isolated
// sandbox provider, "tmpdir", that keeps each sandbox in a temp directory
// and refuses network-dependent config. See README.md.
package main

import "github.com/missingstudio/sanddune/sdk"

func main() {
	sdk.Serve(sdk.ServeOpts{
		Sandboxes: map[string]sdk.SandboxProvider{"tmpdir": newProvider()},
	})
}
