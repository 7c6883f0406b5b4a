package vercel_test

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/plugins/vercel"
	"github.com/missingstudio/sanddune/plugins/vercel/vercelfake"
	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
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
	sandboxtest.Run(t, vercel.New(), sandboxtest.Options{Config: cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(srv.URL)})})
}

// startFake starts the fake Vercel API with credentials in the env.
func startFake(t *testing.T) *vercelfake.Server {
	t.Helper()
	kittest.RequireEngine(t, "bubblewrap (the fake Vercel API runs commands with it)", vercelfake.Available())
	srv, err := vercelfake.New(vercelfake.Options{Token: "test-token", TeamID: "team_test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Setenv("VERCEL_TOKEN", "test-token")
	t.Setenv("VERCEL_TEAM_ID", "team_test")
	t.Setenv("VERCEL_PROJECT_ID", "prj_test")
	t.Setenv("VERCEL_OIDC_TOKEN", "")
	t.Setenv("SANDDUNE_VERCEL_BASE_URL", srv.URL)
	return srv
}
