// Command sanddune-egress enforces a sandbox's egress policy from inside
// its network namespace: docker and podman run it in a sidecar container
// sharing the sandbox's network; bubblewrap runs each command under it
// (`sanddune-egress wrap`). Build it static (CGO_ENABLED=0) so it runs in
// any image; the sandbox plugins find it beside their own binary or on
// PATH.
package main

import (
	"os"

	"github.com/missingstudio/sanddune/internal/egress"
)

func main() { os.Exit(egress.Main(os.Args[1:], os.Stdout)) }
