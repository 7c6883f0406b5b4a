package enginetest

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// enforcing is the local sandbox provider declaring the egress capability,
// a fake of an enforcing one: it keeps the policy Create got, and its
// sandboxes report their refusals as an enforcing proxy shutting down
// does, when the sandbox closes.
type enforcing struct {
	sdk.SandboxProvider
	mu       sync.Mutex
	policies []*sdk.EgressPolicy
	refusals []sdk.EgressDenial
}

func (e *enforcing) Info(ctx context.Context) (sdk.Info, error) {
	info, err := e.SandboxProvider.Info(ctx)
	if err == nil {
		caps := *info.Sandbox
		caps.Egress = true
		info.Sandbox = &caps
	}
	return info, err
}

func (e *enforcing) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	e.mu.Lock()
	e.policies = append(e.policies, req.Egress)
	e.mu.Unlock()
	sb, err := e.SandboxProvider.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	return &flushing{Sandbox: sb, refusals: e.refusals}, nil
}

type flushing struct {
	sdk.Sandbox
	refusals []sdk.EgressDenial
}

func (f *flushing) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	<-ctx.Done()
	for _, d := range f.refusals {
		report(d)
	}
	return nil
}

// TestEgressPolicyAndRefusals: the run's policy (the sandbox's entries,
// and the agent's endpoints unless NoAgent) reaches Create over the
// plugin protocol; every refusal the sandbox reports, also the last ones
// as it closes, is an OnEgressDenied event and a count per target in the
// result; the first of each target is a warning in the run's log; the
// run's secrets are hidden.
func TestEgressPolicyAndRefusals(t *testing.T) {
	const secret = "s3cr3t-t0ken-4242"
	e := &enforcing{SandboxProvider: local.New(), refusals: []sdk.EgressDenial{
		{Host: "example.com", Port: 443, Proto: "tcp", Reason: "not in egress.allow"},
		{Host: secret + ".exfil.test", Proto: "dns", Reason: "not in egress.allow"},
		{Host: "example.com", Port: 443, Proto: "tcp", Reason: "not in egress.allow"},
	}}
	sb := core.SandboxRef{Address: "sandbox.enforcing.test", Plugin: "enforcing", Provider: plugintest.Sandbox(t, e),
		Config: sdk.Config{Value: cty.EmptyObjectVal},
		Egress: &core.Egress{Allow: []string{"ok.test:18080", "10.20.0.0/16"}, Hosts: map[string]string{"ok.test": "172.17.0.1"}}}
	agent := fake(t, &fakeAgent{Script: func(int) string { return "cat > /dev/null; echo TEXT done" },
		Desc: sdk.AgentDescription{Endpoints: []string{"api.model.test", "10.20.0.0/16"}}})

	var term buffer
	o := options(newRepo(t), sb, agent, &term)
	o.Env = map[string]string{"API_TOKEN": secret}
	var mu sync.Mutex
	var seen []core.EgressDenied
	o.OnEgressDenied = func(d core.EgressDenied) {
		mu.Lock()
		seen = append(seen, d)
		mu.Unlock()
	}
	res := run(t, o)

	want := &sdk.EgressPolicy{Allow: []string{"ok.test:18080", "10.20.0.0/16", "api.model.test"}, Hosts: map[string]string{"ok.test": "172.17.0.1"}}
	if len(e.policies) != 1 || !slices.Equal(e.policies[0].Allow, want.Allow) || e.policies[0].Hosts["ok.test"] != "172.17.0.1" {
		t.Errorf("Create got policies %+v, want [%+v]", e.policies, want)
	}
	if res.EgressDenied != 3 || len(seen) != 3 {
		t.Fatalf("%d refusals counted, %d observed; want 3:\n%s", res.EgressDenied, len(seen), term.String())
	}
	if want := []core.EgressCount{{Target: "example.com:443", Count: 2}, {Target: "[redacted API_TOKEN].exfil.test (dns)", Count: 1}}; !slices.Equal(res.EgressRefused, want) {
		t.Errorf("EgressRefused %+v, want %+v", res.EgressRefused, want)
	}
	if seen[0].Run != "test" || seen[0].Host != "example.com" || seen[0].Port != 443 || seen[0].Time.IsZero() ||
		seen[1].Host != "[redacted API_TOKEN].exfil.test" {
		t.Errorf("observed %+v", seen)
	}
	logFile, err := os.ReadFile(res.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{term.String(), string(logFile)} {
		for _, w := range []string{"warning: egress denied: example.com:443 (not in egress.allow)",
			"warning: egress denied: [redacted API_TOKEN].exfil.test (dns) (not in egress.allow)"} {
			if strings.Count(out, w) != 1 {
				t.Errorf("lacks %q, or has it more than once:\n%s", w, out)
			}
		}
		if strings.Contains(out, secret) {
			t.Errorf("the secret leaked:\n%s", out)
		}
	}
	if !strings.Contains(string(logFile), "egress:     3 refused: example.com:443 ×2, [redacted API_TOKEN].exfil.test (dns)\n") {
		t.Errorf("the summary lacks the count:\n%s", logFile)
	}

	o = options(newRepo(t), sb, agent, &buffer{})
	o.Sandbox.Egress = &core.Egress{Allow: []string{"ok.test:18080"}, NoAgent: true}
	run(t, o)
	if got := e.policies[1].Allow; !slices.Equal(got, []string{"ok.test:18080"}) {
		t.Errorf("with NoAgent, Create got %v, want the sandbox's entries only", got)
	}
}

// TestEgressRefusedWhereNotEnforced: a run built in Go whose sandbox has
// an egress policy but a provider that cannot enforce it fails before
// anything starts, naming the sandbox.
func TestEgressRefusedWhereNotEnforced(t *testing.T) {
	sb := localSandbox(t)
	sb.Egress = &core.Egress{Allow: []string{"example.com"}}
	_, err := core.Run(context.Background(), options(newRepo(t), sb, commandAgent(t, "cat > /dev/null"), &buffer{}))
	var re *core.RunError
	if !errors.As(err, &re) || re.Phase != core.PhaseConfig || !strings.Contains(err.Error(), "sandbox.local.test.egress: The sandbox cannot enforce egress") {
		t.Fatalf("Run: %v, want a config error naming sandbox.local.test.egress", err)
	}
}
