package command

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

func config(argv []string, env map[string]string) sdk.Config {
	cmd := make([]cty.Value, len(argv))
	for i, a := range argv {
		cmd[i] = cty.StringVal(a)
	}
	cmdVal := cty.ListValEmpty(cty.String)
	if len(cmd) > 0 {
		cmdVal = cty.ListVal(cmd)
	}
	envVal := cty.NullVal(cty.Map(cty.String))
	if env != nil {
		m := map[string]cty.Value{}
		for k, v := range env {
			m[k] = cty.StringVal(v)
		}
		envVal = cty.MapVal(m)
	}
	return sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"command": cmdVal, "env": envVal})}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	s, err := New().ConfigSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Attributes) != 3 || s.Attributes[0].Name != "command" || !s.Attributes[0].Required ||
		!s.Attributes[0].Type.Equals(cty.List(cty.String)) || s.Attributes[1].Name != "env" || s.Attributes[1].Required ||
		s.Attributes[2].Name != "endpoints" || s.Attributes[2].Required {
		t.Errorf("schema %+v", s)
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := New()
	if ds, err := p.Configure(ctx, config([]string{"sh", "-c", "echo hi"}, map[string]string{"A_1": "x"})); err != nil || len(ds) != 0 {
		t.Errorf("valid config: %v %v", ds, err)
	}
	for name, cfg := range map[string]sdk.Config{
		"empty command": config(nil, nil),
		"empty program": config([]string{""}, nil),
		"bad env key":   config([]string{"x"}, map[string]string{"1BAD": "x"}),
	} {
		ds, err := p.Configure(ctx, cfg)
		if err != nil || !ds.HasErrors() {
			t.Errorf("%s: diagnostics %v, err %v; want an error diagnostic", name, ds, err)
		}
	}
}

func TestBuildCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := config([]string{"my-agent", "--print"}, map[string]string{"K": "v"})
	c, err := New().BuildCommand(ctx, sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Prompt: "do it\n", Iteration: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Argv) != 2 || c.Argv[0] != "my-agent" || c.Argv[1] != "--print" || c.Shell != "" || string(c.Stdin) != "do it\n" || c.Env != nil {
		t.Errorf("print command %+v", c)
	}
	// The block's env is the agent-provider layer, below the run's env:
	// it is described, never returned as per-exec env.
	if d, err := New().Describe(ctx, cfg); err != nil || d.Env["K"] != "v" {
		t.Errorf("Describe = %+v, %v; want env K=v", d, err)
	}
	c, err = New().BuildCommand(ctx, sdk.CommandRequest{Config: cfg, Mode: sdk.ModeInteractive, Prompt: "do it"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Argv) != 2 || c.Stdin != nil {
		t.Errorf("interactive command %+v", c)
	}
	if _, err := New().BuildCommand(ctx, sdk.CommandRequest{Config: config(nil, nil)}); err == nil {
		t.Error("empty command: no error")
	}
}

func TestParseStreamOneTextEventPerLine(t *testing.T) {
	t.Parallel()
	lines := make(chan []byte, 4)
	for _, l := range []string{"hello", "", `{"type":"result"}`, "\xff\xfe"} {
		lines <- []byte(l)
	}
	close(lines)
	var got []sdk.Event
	if err := New().ParseStream(context.Background(), config([]string{"x"}, nil), lines, func(e sdk.Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"hello", "", `{"type":"result"}`, "\xff\xfe"}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Type != sdk.EventText || e.Text != want[i] {
			t.Errorf("event %d: %+v, want text %q", i, e, want[i])
		}
	}
}

func TestDescribeAndRewriteSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := New().Describe(ctx, config([]string{"x"}, nil))
	if err != nil || d.Sessions != nil || len(d.RequiredEnv) != 0 || d.Resume || d.Endpoints != nil {
		t.Errorf("describe %+v %v", d, err)
	}
	cfg := config([]string{"x"}, nil)
	cfg.Value = cty.ObjectVal(map[string]cty.Value{"command": cfg.Value.GetAttr("command"), "env": cfg.Value.GetAttr("env"),
		"endpoints": cty.ListVal([]cty.Value{cty.StringVal("llm.internal:8080")})})
	if d, err := New().Describe(ctx, cfg); err != nil || len(d.Endpoints) != 1 || d.Endpoints[0] != "llm.internal:8080" {
		t.Errorf("declared endpoints: describe %+v %v", d, err)
	}
	data := []byte(`{"cwd":"/a"}`)
	out, err := New().RewriteSession(ctx, sdk.RewriteSessionRequest{Data: data, FromCwd: "/a", ToCwd: "/b"})
	if err != nil || string(out) != string(data) {
		t.Errorf("rewrite %q %v", out, err)
	}
}
