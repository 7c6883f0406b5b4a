package vercel

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// TestConformanceAgainstFakeVercelAPI runs the sandbox conformance kit
// against the fake Vercel API (real commands in bubblewrap namespaces).
func TestConformanceAgainstFakeVercelAPI(t *testing.T) {
	srv := startFake(t)
	t.Cleanup(func() { // after the kit's own cleanups
		if n := srv.RunningSessions(); n != 0 {
			t.Errorf("%d sessions still run after every sandbox was closed", n)
		}
	})
	sandboxtest.Run(t, New(), sandboxtest.Options{Config: cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(srv.URL)}),
		SkipNetworkNone: "the fake Vercel API does not enforce network policies; Vercel's own microVMs do"})
}
