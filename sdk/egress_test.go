package sdk_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
	"github.com/missingstudio/sanddune/sdk/internal/fake"
)

// enforcer is a provider declaring the egress capability: it keeps the
// policy Create got, and its sandboxes report two refusals, then wait for
// the watcher to leave.
type enforcer struct {
	stub
	policy chan *sdk.EgressPolicy
}

func (e *enforcer) Info(ctx context.Context) (sdk.Info, error) {
	info, err := e.stub.Info(ctx)
	info.Sandbox.Egress = true
	return info, err
}

func (e *enforcer) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	e.policy <- req.Egress
	return &watched{stubSandbox: stubSandbox{stub: &e.stub}}, nil
}

type watched struct{ stubSandbox }

var denials = []sdk.EgressDenial{
	{Host: "example.com", Port: 443, Proto: "tcp", Reason: "not in egress.allow"},
	{Host: "leak.example\xff", Proto: "dns", Reason: "not in egress.allow"},
}

func (w *watched) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	for _, d := range denials {
		report(d)
	}
	<-ctx.Done()
	return nil
}

// TestEgressCrossesTheConnection: the capability, the policy Create gets
// (nil when the run has none) and the refusals a sandbox reports cross
// the plugin connection intact, the watch ends when the host cancels it,
// and a sandbox that reports none fails the watch naming the plugin.
func TestEgressCrossesTheConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := &enforcer{policy: make(chan *sdk.EgressPolicy, 2)}
	cp := client(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"e": e, "plain": &stub{}}})
	p, err := host.DispenseSandbox(cp, "e")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := p.Info(ctx); err != nil || !info.Sandbox.Egress {
		t.Fatalf("info %+v, %v: want the egress capability", info.Sandbox, err)
	}

	want := &sdk.EgressPolicy{Allow: []string{"api.anthropic.com", "10.0.0.1:22"}, Hosts: map[string]string{"ok.test": "172.17.0.1"}}
	sb, err := p.Create(ctx, sdk.CreateRequest{Egress: want})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-e.policy; !reflect.DeepEqual(got, want) {
		t.Errorf("Create got policy %+v, want %+v", got, want)
	}
	if _, err := p.Create(ctx, sdk.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := <-e.policy; got != nil {
		t.Errorf("Create without a policy got %+v, want nil", got)
	}

	wctx, cancel := context.WithCancel(ctx)
	var got []sdk.EgressDenial
	err = sb.(sdk.EgressWatcher).WatchEgress(wctx, func(d sdk.EgressDenial) {
		got = append(got, d)
		if len(got) == len(denials) {
			cancel()
		}
	})
	if err != nil || !slices.Equal(got, denials) {
		t.Errorf("WatchEgress reported %+v, %v; want %+v, nil", got, err, denials)
	}

	plain, err := host.DispenseSandbox(cp, "plain")
	if err != nil {
		t.Fatal(err)
	}
	psb, err := plain.Create(ctx, sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	err = psb.(sdk.EgressWatcher).WatchEgress(ctx, func(d sdk.EgressDenial) { t.Errorf("reported %+v", d) })
	if err == nil || !strings.HasPrefix(err.Error(), "plugin plain: WatchEgress: ") {
		t.Errorf("watching a sandbox without EgressWatcher: %v, want a PluginError naming the plugin", err)
	}
}

// endpointAgent declares the endpoints its CLI needs.
type endpointAgent struct{ fake.AgentProvider }

func (endpointAgent) Describe(context.Context, sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{Endpoints: []string{"api.example.test", "10.1.2.3:8443"}}, nil
}

// TestAgentEndpointsCrossTheConnection: the endpoints an agent declares
// reach the host.
func TestAgentEndpointsCrossTheConnection(t *testing.T) {
	t.Parallel()
	cp := client(t, sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"a": endpointAgent{}}})
	a, err := host.DispenseAgent(cp, "a")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Describe(context.Background(), sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"api.example.test", "10.1.2.3:8443"}; !slices.Equal(d.Endpoints, want) {
		t.Errorf("endpoints %v, want %v", d.Endpoints, want)
	}
}
