package host_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// counting is a sandbox provider that counts the catalog's and the
// preflights' calls; its preflight fails while fail is set.
type counting struct {
	infos, preflights atomic.Int32
	fail              atomic.Bool
}

func (p *counting) Info(context.Context) (sdk.Info, error) {
	p.infos.Add(1)
	return sdk.Info{Name: "c", Kind: sdk.KindSandbox, Sandbox: &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated}}, nil
}
func (p *counting) ConfigSchema(context.Context) (sdk.Schema, error)               { return sdk.Schema{}, nil }
func (p *counting) Configure(context.Context, sdk.Config) (sdk.Diagnostics, error) { return nil, nil }
func (p *counting) Describe(context.Context, sdk.Config) (sdk.SandboxDescription, error) {
	return sdk.SandboxDescription{}, nil
}
func (p *counting) Preflight(context.Context, sdk.PreflightRequest) error {
	p.preflights.Add(1)
	if p.fail.Load() {
		return errors.New("the engine is down")
	}
	return nil
}
func (p *counting) Create(context.Context, sdk.CreateRequest) (sdk.Sandbox, error) {
	return nil, errors.New("no sandbox here")
}

// TestHostAsksEachFactOnce (over real gRPC): one plugin client asks the
// catalog once, whatever dispenses and Creates follow, and a preflight
// once per config and repository that passed, however many runs ask
// (20 at once here, through components dispensed apart); a failed one is
// asked again.
func TestHostAsksEachFactOnce(t *testing.T) {
	p := &counting{}
	ctx, cancel := context.WithCancel(context.Background())
	addr, stopped, err := wire.ServeInProcess(ctx, wire.ServeConfig(sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"c": p}}, hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	client := plugin.NewClient(wire.Reattach(host.ClientConfig(nil, hclog.NewNullLogger()), addr))
	rpc, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-stopped; _ = rpc.Close() }()

	if _, err := host.CatalogComponents(ctx, rpc); err != nil {
		t.Fatal(err)
	}
	cfg := func(s string) sdk.Config {
		return sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(s)})}
	}
	var wg sync.WaitGroup
	for range 20 {
		sp, err := host.DispenseSandbox(rpc, "c")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sp.Preflight(ctx, sdk.PreflightRequest{Config: cfg("a"), HostRepoPath: "/repo", HostUID: 1, HostGID: 1}); err != nil {
				t.Error(err)
			}
			_, _ = sp.Create(ctx, sdk.CreateRequest{Config: cfg("a"), Progress: func(sdk.Progress) {}})
		}()
	}
	wg.Wait()
	if n := p.infos.Load(); n != 1 {
		t.Errorf("the catalog was asked %d times; want once", n)
	}
	if n := p.preflights.Load(); n != 1 {
		t.Errorf("20 runs of one block asked %d preflights; want one", n)
	}

	sp, _ := host.DispenseSandbox(rpc, "c")
	p.fail.Store(true)
	for i, req := range []sdk.PreflightRequest{
		{Config: cfg("b"), HostRepoPath: "/repo", HostUID: 1, HostGID: 1},
		{Config: cfg("b"), HostRepoPath: "/repo", HostUID: 1, HostGID: 1},
	} {
		if err := sp.Preflight(ctx, req); err == nil {
			t.Errorf("preflight %d of a failing config passed", i)
		}
	}
	p.fail.Store(false)
	for _, req := range []sdk.PreflightRequest{
		{Config: cfg("b"), HostRepoPath: "/repo", HostUID: 1, HostGID: 1},
		{Config: cfg("a"), HostRepoPath: "/other", HostUID: 1, HostGID: 1},
		{Config: cfg("a"), HostRepoPath: "/repo", HostUID: 2, HostGID: 1},
	} {
		if err := sp.Preflight(ctx, req); err != nil {
			t.Error(err)
		}
	}
	if n := p.preflights.Load(); n != 6 {
		t.Errorf("%d preflights; want 6: the first, two that failed (each asked), then another config, repository and user", n)
	}
}
