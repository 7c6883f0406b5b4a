package enginetest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/docker"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
)

// dockerSandbox is the docker sandbox over the plugin protocol, on the
// test image scripts/ci-setup.sh builds; the test is skipped (failed under
// SANDDUNE_REQUIRE_ENGINES=1) when the daemon or the image is missing.
func dockerSandbox(t testing.TB) core.SandboxRef {
	t.Helper()
	image := os.Getenv("SANDDUNE_TEST_IMAGE")
	if image == "" {
		image = "sanddune-test-base:bookworm"
	}
	cfg := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(image)})}
	p := docker.New()
	err := p.Preflight(context.Background(), sdk.PreflightRequest{Config: cfg, HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()})
	kittest.RequireEngine(t, "docker", err)
	return core.SandboxRef{Address: "sandbox.docker.test", Plugin: "docker", Provider: plugintest.Sandbox(t, p), Config: cfg}
}

// TestPermissionBypassOnlyWhenConfined: the agent is told it may skip its
// permission prompts inside docker and bubblewrap, never in the local
// sandbox, where it runs as the user on the host.
func TestPermissionBypassOnlyWhenConfined(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sandbox func(testing.TB) core.SandboxRef
		bypass  bool
	}{
		{"Local", localSandbox, false},
		{"Bubblewrap", bwrapSandbox, true},
		{"Docker", dockerSandbox, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := tc.sandbox(t)
			var mu sync.Mutex
			var reqs []sdk.CommandRequest
			f := script("echo TEXT done")
			f.OnBuild = func(req sdk.CommandRequest) {
				mu.Lock()
				defer mu.Unlock()
				reqs = append(reqs, req)
			}
			run(t, options(newRepo(t), sb, fake(t, f), &buffer{}))
			mu.Lock()
			defer mu.Unlock()
			if len(reqs) != 1 {
				t.Fatalf("%d commands built, want 1", len(reqs))
			}
			if reqs[0].SkipPermissions != tc.bypass {
				t.Errorf("SkipPermissions = %v in the %s sandbox, want %v", reqs[0].SkipPermissions, tc.name, tc.bypass)
			}
		})
	}
}
