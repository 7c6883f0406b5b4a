package enginetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// stuckCreate is the local sandbox provider whose Create never returns
// before its context ends.
type stuckCreate struct{ sdk.SandboxProvider }

func (stuckCreate) Create(ctx context.Context, _ sdk.CreateRequest) (sdk.Sandbox, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestLifecycleTimeouts: a sandbox creation that does not return, and a
// hook without its own timeout, are ended by the run's timeouts, and the
// error names the timeouts attribute that raises them.
func TestLifecycleTimeouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(*core.RunOptions)
		want  string
	}{
		{"create_sandbox", func(o *core.RunOptions) {
			o.Sandbox.Provider = plugintest.Sandbox(t, stuckCreate{local.New()})
			o.Timeouts.CreateSandbox = 300 * time.Millisecond
		}, "timed out after 300ms (timeouts { create_sandbox = ... } raises it)"},
		{"hooks", func(o *core.RunOptions) {
			o.Hooks.HostOnWorktreeReady = []core.Hook{{Command: "sleep 600"}}
			o.Timeouts.Hooks = 300 * time.Millisecond
		}, "timed out after 300ms"},
		{"copy", func(o *core.RunOptions) {
			o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/copy"}
			o.CopyToWorktree = []string{"big"}
			o.Timeouts.Copy = time.Nanosecond
		}, "timed out after 1ns (timeouts { copy = ... } raises it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t)
			var term buffer
			o := options(repo, core.SandboxRef{Address: "sandbox.local.test", Plugin: "local",
				Provider: plugintest.Sandbox(t, local.New()), Config: sdk.Config{Value: cty.EmptyObjectVal}}, commandAgent(t, "cat > /dev/null"), &term)
			write(t, repo+"/big/file.txt", "not in git")
			tc.setup(&o)
			_, err := core.Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want %q", err, tc.want)
			}
		})
	}
}
