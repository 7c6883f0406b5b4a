package enginetest

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/plugins/docker"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
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
	t.Parallel()
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

// uidProvider is the local sandbox whose sandboxes report uid as the user
// commands run as; probes counts the `id -u` execs the host makes.
type uidProvider struct {
	sdk.SandboxProvider
	uid    *int
	probes *atomic.Int32
}

func (p uidProvider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	sb, err := p.SandboxProvider.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	return &uidSandbox{Sandbox: sb, uid: p.uid, probes: p.probes}, nil
}

type uidSandbox struct {
	sdk.Sandbox
	uid    *int
	probes *atomic.Int32
}

func (s *uidSandbox) Info() sdk.SandboxInfo {
	i := s.Sandbox.Info()
	i.UID = s.uid
	return i
}

func (s *uidSandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if slices.Equal(req.Argv, []string{"id", "-u"}) {
		s.probes.Add(1)
	}
	return s.Sandbox.Exec(ctx, req, out)
}

// TestRunsAsRootFromSandboxInfo: the agent is told it runs as root from
// the uid the sandbox reports (over the plugin protocol), with no exec to
// ask; a sandbox that reports none is asked once.
func TestRunsAsRootFromSandboxInfo(t *testing.T) {
	root, user := 0, 4242
	for _, tc := range []struct {
		name       string
		uid        *int
		asRoot     bool
		wantProbes int32
	}{
		{"Root", &root, true, 0},
		{"User", &user, false, 0},
		{"Unknown", nil, os.Getuid() == 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var probes atomic.Int32
			p := uidProvider{SandboxProvider: local.New(), uid: tc.uid, probes: &probes}
			sb := core.SandboxRef{Address: "sandbox.local.test", Plugin: "local", Provider: plugintest.Sandbox(t, p), Config: sdk.Config{Value: cty.EmptyObjectVal}}
			var asRoot atomic.Bool
			f := script("echo TEXT done")
			f.OnBuild = func(req sdk.CommandRequest) { asRoot.Store(req.RunsAsRoot) }
			run(t, options(newRepo(t), sb, fake(t, f), &buffer{}))
			if asRoot.Load() != tc.asRoot || probes.Load() != tc.wantProbes {
				t.Fatalf("RunsAsRoot %v after %d id -u probe(s), want %v after %d", asRoot.Load(), probes.Load(), tc.asRoot, tc.wantProbes)
			}
		})
	}
}
