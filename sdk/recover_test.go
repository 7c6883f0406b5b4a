package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
	"github.com/zclconf/go-cty/cty"
)

// recoverer is a stub that also reattaches to its resource "c1".
type recoverer struct {
	commander
	recovered *recoveredSandbox
}

func (r *recoverer) Recover(_ context.Context, cfg sdk.Config, id string) (sdk.Sandbox, error) {
	if id != "c1" || endpoint(cfg) != "https://e.example" {
		return nil, fmt.Errorf("no sandbox %q at %s", id, endpoint(cfg))
	}
	r.recovered = &recoveredSandbox{stubSandbox: stubSandbox{stub: &r.stub}, id: id}
	return r.recovered, nil
}

type recoveredSandbox struct {
	stubSandbox
	id string
}

func (s *recoveredSandbox) Info() sdk.SandboxInfo {
	return sdk.SandboxInfo{ID: s.id, RepoPath: "/recovered/repo", HomePath: "/recovered/home"}
}

func TestFakeRecover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &recoverer{}
	r.exec = func(_ context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
		out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(req.Argv[0])})
		return sdk.ExecResult{ExitCode: 3}, nil
	}
	cp := client(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"r": r, "c": &commander{}}})
	p, err := host.DispenseSandbox(cp, "r")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.(sdk.SandboxRecoverer).Recover(ctx, sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"endpoint": cty.StringVal("https://e.example")})}, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if info := sb.Info(); info.ID != "c1" || info.RepoPath != "/recovered/repo" {
		t.Errorf("recovered SandboxInfo %+v", info)
	}
	var lines []string
	res, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"git"}}, func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
	if err != nil || res.ExitCode != 3 || !slices.Equal(lines, []string{"git"}) {
		t.Errorf("Exec in the recovered sandbox: %+v %q %v", res, lines, err)
	}
	if err := sb.Close(ctx); err != nil || r.recovered.closes != 1 {
		t.Errorf("Close: %v, %d closes", err, r.recovered.closes)
	}
	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"git"}}, func(sdk.OutputLine) {}); err == nil {
		t.Error("Exec after Close did not fail")
	}

	_, err = p.(sdk.SandboxRecoverer).Recover(ctx, sdk.Config{}, "zz")
	if err == nil || !strings.HasPrefix(err.Error(), "plugin r: Recover: ") || errors.Is(err, sdk.ErrNotSupported) {
		t.Errorf("Recover of an unknown id: %v", err)
	}

	c, err := host.DispenseSandbox(cp, "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.(sdk.SandboxRecoverer).Recover(ctx, sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"endpoint": cty.StringVal("https://e.example")})}, "c1"); !errors.Is(err, sdk.ErrNotSupported) {
		t.Errorf("Recover on a provider without it: %v", err)
	}
}
