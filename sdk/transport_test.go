package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
	"github.com/missingstudio/sanddune/sdk/internal/fake"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// stub is a sandbox provider whose behaviour tests set.
type stub struct {
	fake.SandboxProvider
	schema    sdk.Schema
	diags     sdk.Diagnostics
	gotConfig chan sdk.Config
	preflight error
	exec      func(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error)
}

func (s *stub) ConfigSchema(context.Context) (sdk.Schema, error) { return s.schema, nil }

func (s *stub) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	if s.gotConfig != nil {
		s.gotConfig <- cfg
	}
	return s.diags, nil
}

func (s *stub) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	return sdk.SandboxDescription{Env: map[string]string{"FROM": "describe"},
		EgressConflicts: sdk.Diagnostics{{Attribute: "network", Summary: "shared", Detail: "the host's"}}}, nil
}

func (s *stub) Preflight(context.Context, sdk.PreflightRequest) error { return s.preflight }

func (s *stub) Create(_ context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	if req.RunID == "unsupported" {
		return nil, fmt.Errorf("snapshots: %w", sdk.ErrNotSupported)
	}
	return &stubSandbox{stub: s}, nil
}

type stubSandbox struct {
	*stub
	closes int
	mu     sync.Mutex
}

func (s *stubSandbox) Info() sdk.SandboxInfo {
	return sdk.SandboxInfo{ID: "id", RepoPath: "/repo", HomePath: "/home"}
}

func (s *stubSandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	return s.exec(ctx, req, out)
}

func (s *stubSandbox) CopyIn(context.Context, string, string) error { return nil }
func (s *stubSandbox) CopyOut(context.Context, string, string) error {
	return errors.New("no such file")
}

func (s *stubSandbox) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closes++
	return nil
}

// commander adds the optional interfaces.
type commander struct{ stub }

func (c *commander) Commands(context.Context) ([]sdk.CommandSpec, error) {
	return []sdk.CommandSpec{{Name: "build-image", Usage: "build-image [--tag T]", Short: "Build the image"}}, nil
}

func (c *commander) RunCommand(_ context.Context, req sdk.RunCommandRequest, out sdk.OutputFunc) (int, error) {
	for _, a := range req.Args {
		out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(a)})
	}
	return len(req.Args), nil
}

// ListResources lists "c1", or with a config "c1" at the config's
// endpoint: the resource calls see the block's config.
func (c *commander) ListResources(_ context.Context, cfg sdk.Config) ([]sdk.Resource, error) {
	return []sdk.Resource{{ID: "c1", Labels: map[string]string{sdk.LabelRun: "r1", "endpoint": endpoint(cfg)}}}, nil
}

func (c *commander) RemoveResource(_ context.Context, cfg sdk.Config, id string) error {
	if id != "c1" {
		return errors.New("no such resource")
	}
	if e := endpoint(cfg); e != "defaults" && e != "https://e.example" {
		return fmt.Errorf("no resource c1 at %s", e)
	}
	return nil
}

// endpoint is a resource config's endpoint attribute, "defaults" for a
// null config.
func endpoint(cfg sdk.Config) string {
	if cfg.IsNull() {
		return "defaults"
	}
	var c struct {
		Endpoint string `cty:"endpoint"`
	}
	if err := cfg.Decode(&c); err != nil {
		return err.Error()
	}
	return c.Endpoint
}

func TestFakeCatalog(t *testing.T) {
	t.Parallel()
	cp := client(t, sdk.ServeOpts{
		Sandboxes: map[string]sdk.SandboxProvider{"b": &commander{}, "a": &fake.SandboxProvider{Contract: sdk.ContractIsolated}},
		Agents:    map[string]sdk.AgentProvider{"c": fake.AgentProvider{}},
	})
	ctx := context.Background()
	comps, err := host.CatalogComponents(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range comps {
		got = append(got, fmt.Sprintf("%s/%v", c.Kind, c.ProtocolVersions))
	}
	want := []string{"sandbox/[1]", "sandbox/[1]", "agent/[1]"}
	if !slices.Equal(got, want) {
		t.Errorf("catalog %q, want %q", got, want)
	}
	if len(comps) != 3 || comps[0].Name != "a" || comps[1].Name != "b" || comps[2].Name != "c" ||
		comps[0].Sandbox.Contract != sdk.ContractIsolated || comps[2].Description != "test agent" {
		t.Errorf("Catalog: %+v", comps)
	}
	// Serve fills the name, kind and protocol versions the provider left out.
	info, err := plugintest.Agent(t, fake.AgentProvider{}).Info(ctx)
	if err != nil || info.Name != "plugintest" || info.Kind != sdk.KindAgent || !slices.Equal(info.ProtocolVersions, []int{wire.ProtocolVersion}) {
		t.Errorf("Info: %+v, %v", info, err)
	}
}

func TestFakeSchemaConfigDiagnostics(t *testing.T) {
	t.Parallel()
	schema := sdk.Schema{
		Attributes: []sdk.Attribute{
			{Name: "image", Type: cty.String, Required: true, Description: "image"},
			{Name: "network", Type: cty.String, Default: cty.StringVal("bridge")},
			{Name: "ports", Type: cty.List(cty.Number), Default: cty.ListVal([]cty.Value{cty.NumberIntVal(80)})},
			{Name: "labels", Type: cty.Map(cty.String), Default: cty.MapValEmpty(cty.String)},
			{Name: "any", Type: cty.DynamicPseudoType, Default: cty.True},
		},
		Blocks: []sdk.NestedBlock{
			{TypeName: "mount", Nesting: sdk.NestingList, Description: "mounts", Body: sdk.Schema{
				Attributes: []sdk.Attribute{{Name: "host_path", Type: cty.String, Required: true}},
			}},
			{TypeName: "limits", Nesting: sdk.NestingSingle, Required: true, Body: sdk.Schema{}},
		},
	}
	diags := sdk.Diagnostics{
		{Severity: sdk.SeverityError, Summary: "bad mount", Detail: "host_path must be absolute", Attribute: "mount.0.host_path"},
		{Severity: sdk.SeverityWarning, Summary: "deprecated"},
	}
	s := &stub{schema: schema, diags: diags, gotConfig: make(chan sdk.Config, 1)}
	p := plugintest.Sandbox(t, s)
	ctx := context.Background()

	got, err := p.ConfigSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !schemaEqual(got, schema) {
		t.Errorf("schema:\n got %#v\nwant %#v", got, schema)
	}

	cfg := cty.ObjectVal(map[string]cty.Value{
		"image":  cty.StringVal("debian"),
		"ports":  cty.ListVal([]cty.Value{cty.NumberIntVal(1), cty.NumberFloatVal(2.5)}),
		"labels": cty.NullVal(cty.Map(cty.String)),
		"any":    cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.True}),
		"mount":  cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"host_path": cty.StringVal("/x")})}),
	})
	gotDiags, err := p.Configure(ctx, sdk.Config{Value: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotDiags, diags) {
		t.Errorf("diagnostics %#v, want %#v", gotDiags, diags)
	}
	if gotCfg := <-s.gotConfig; !gotCfg.Value.RawEquals(cfg) {
		t.Errorf("config %#v, want %#v", gotCfg.Value, cfg)
	}
	if _, err := p.Configure(ctx, sdk.Config{}); err != nil {
		t.Fatal(err)
	}
	if gotCfg := <-s.gotConfig; gotCfg.Value != cty.NilVal {
		t.Errorf("empty config arrived as %#v", gotCfg.Value)
	}
}

func schemaEqual(a, b sdk.Schema) bool {
	if len(a.Attributes) != len(b.Attributes) || len(a.Blocks) != len(b.Blocks) {
		return false
	}
	for i, x := range a.Attributes {
		y := b.Attributes[i]
		if x.Name != y.Name || !x.Type.Equals(y.Type) || x.Required != y.Required || x.Description != y.Description ||
			(x.Default == cty.NilVal) != (y.Default == cty.NilVal) || (x.Default != cty.NilVal && !x.Default.RawEquals(y.Default)) {
			return false
		}
	}
	for i, x := range a.Blocks {
		y := b.Blocks[i]
		if x.TypeName != y.TypeName || x.Nesting != y.Nesting || x.Required != y.Required || x.Description != y.Description || !schemaEqual(x.Body, y.Body) {
			return false
		}
	}
	return true
}

func TestFakeErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := plugintest.Sandbox(t, &stub{preflight: errors.New("daemon unreachable"),
		exec: func(context.Context, sdk.ExecRequest, sdk.OutputFunc) (sdk.ExecResult, error) {
			return sdk.ExecResult{}, fmt.Errorf("container c1 was removed: %w", sdk.ErrSandboxGone)
		}})
	if d, err := p.Describe(ctx, sdk.Config{}); err != nil || d.Env["FROM"] != "describe" ||
		len(d.EgressConflicts) != 1 || d.EgressConflicts[0] != (sdk.Diagnostic{Attribute: "network", Summary: "shared", Detail: "the host's"}) {
		t.Errorf("Describe through gRPC: %+v, %v", d, err)
	}
	err := p.Preflight(ctx, sdk.PreflightRequest{})
	if err == nil || err.Error() != "plugin plugintest: Preflight: daemon unreachable" {
		t.Errorf("Preflight error %v (%T)", err, err)
	}
	if _, err := p.Create(ctx, sdk.CreateRequest{RunID: "unsupported"}); !errors.Is(err, sdk.ErrNotSupported) {
		t.Errorf("Create returning ErrNotSupported: %v", err)
	}
	if _, err := p.(sdk.CommandProvider).Commands(ctx); !errors.Is(err, sdk.ErrNotSupported) {
		t.Errorf("Commands on a provider without them: %v", err)
	}
	if _, err := p.(sdk.ResourceLister).ListResources(ctx, sdk.Config{}); !errors.Is(err, sdk.ErrNotSupported) {
		t.Errorf("ListResources on a provider without it: %v", err)
	}
	sb, err := p.Create(ctx, sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.CopyOut(ctx, "x", "y"); err == nil || !strings.Contains(err.Error(), ": CopyOut: ") {
		t.Errorf("CopyOut error %v", err)
	}
	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); !errors.Is(err, sdk.ErrSandboxGone) ||
		err.Error() != "plugin plugintest: Exec: container c1 was removed: the sandbox disappeared" {
		t.Errorf("Exec in a sandbox that disappeared: %v", err)
	}
	if info := sb.Info(); !reflect.DeepEqual(info, sdk.SandboxInfo{ID: "id", RepoPath: "/repo", HomePath: "/home"}) {
		t.Errorf("SandboxInfo %+v", info)
	}

	cp := client(t, sdk.ServeOpts{})
	missing, err := host.DispenseSandbox(cp, "missing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Info(ctx); err == nil {
		t.Error("Info of a component the plugin does not serve did not fail")
	}
}

func TestFakeCommandsAndResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := plugintest.Sandbox(t, &commander{})
	specs, err := p.(sdk.CommandProvider).Commands(ctx)
	if err != nil || len(specs) != 1 || specs[0].Usage != "build-image [--tag T]" {
		t.Errorf("Commands: %+v, %v", specs, err)
	}
	var lines []string
	code, err := p.(sdk.CommandProvider).RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: []string{"a", "b c"}},
		func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
	if err != nil || code != 2 || !slices.Equal(lines, []string{"a", "b c"}) {
		t.Errorf("RunCommand: %d %q %v", code, lines, err)
	}
	rl := p.(sdk.ResourceLister)
	rs, err := rl.ListResources(ctx, sdk.Config{})
	if err != nil || len(rs) != 1 || rs[0].Labels[sdk.LabelRun] != "r1" || rs[0].Labels["endpoint"] != "defaults" {
		t.Errorf("ListResources with the defaults: %+v, %v", rs, err)
	}
	cfg := func(endpoint string) sdk.Config {
		return sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"endpoint": cty.StringVal(endpoint)})}
	}
	rs, err = rl.ListResources(ctx, cfg("https://e.example"))
	if err != nil || len(rs) != 1 || rs[0].Labels["endpoint"] != "https://e.example" {
		t.Errorf("ListResources with a block's config: %+v, %v", rs, err)
	}
	if err := rl.RemoveResource(ctx, sdk.Config{}, "c1"); err != nil {
		t.Error(err)
	}
	if err := rl.RemoveResource(ctx, cfg("https://e.example"), "c1"); err != nil {
		t.Error(err)
	}
	if err := rl.RemoveResource(ctx, cfg("https://other.example"), "c1"); err == nil {
		t.Error("RemoveResource did not get the config")
	}
	if err := rl.RemoveResource(ctx, sdk.Config{}, "zz"); err == nil {
		t.Error("RemoveResource of an unknown id did not fail")
	}
}

func TestFakeExecVolumeAndSplitting(t *testing.T) {
	t.Parallel()
	const n = 200000
	huge := bytes.Repeat([]byte("y"), 2*sdk.MaxLineBytes+7)
	s := &stub{exec: func(_ context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
		if req.Shell != "go" || req.Env["K"] != "\xff" || !slices.Equal(req.Argv, []string(nil)) || req.Timeout != time.Second {
			return sdk.ExecResult{}, fmt.Errorf("request arrived as %+v", req)
		}
		buf := []byte{}
		for i := range n {
			buf = strconv.AppendInt(buf[:0], int64(i), 10)
			out(sdk.OutputLine{Stream: sdk.Stream(1 + i%2), Text: buf})
		}
		out(sdk.OutputLine{Stream: sdk.Stdout, Text: huge}) // too long: the transport splits it
		return sdk.ExecResult{ExitCode: 42}, nil
	}}
	sb, err := plugintest.Sandbox(t, s).Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	next := [3]int{0, 0, 1}
	partial := map[sdk.Stream][]byte{}
	var last []byte
	bad := 0
	res, err := sb.Exec(context.Background(), sdk.ExecRequest{Shell: "go", Env: map[string]string{"K": "\xff"}, Timeout: time.Second},
		func(l sdk.OutputLine) {
			if len(l.Text) > sdk.MaxLineBytes {
				bad++
			}
			line := append(partial[l.Stream], l.Text...)
			if l.Partial {
				partial[l.Stream] = line
				return
			}
			delete(partial, l.Stream)
			if next[l.Stream] < n {
				if string(line) != strconv.Itoa(next[l.Stream]) {
					bad++
				}
				next[l.Stream] += 2
				return
			}
			last = bytes.Clone(line)
		})
	if err != nil || res.ExitCode != 42 {
		t.Fatalf("Exec: %+v, %v", res, err)
	}
	if bad > 0 || next[1] != n || next[2] != n+1 || !bytes.Equal(last, huge) {
		t.Errorf("output: %d bad lines, next %v, last line %d bytes", bad, next, len(last))
	}
}

func TestFakeExecCancel(t *testing.T) {
	t.Parallel()
	started, stopped := make(chan struct{}), make(chan error, 1)
	s := &stub{exec: func(ctx context.Context, _ sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
		out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte("started")})
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return sdk.ExecResult{}, ctx.Err()
	}}
	sb, err := plugintest.Sandbox(t, s).Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err = sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"x"}}, func(sdk.OutputLine) {})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Exec after cancel: %v", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("plugin-side context: %v", err)
	}
}

func TestFakeCloseIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &stub{}
	sb, err := plugintest.Sandbox(t, s).Create(ctx, sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"x"}}, func(sdk.OutputLine) {}); err == nil {
		t.Error("Exec after Close did not fail")
	}
}

func TestFakePluginShutdown(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	s := &stub{exec: func(ctx context.Context, _ sdk.ExecRequest, _ sdk.OutputFunc) (sdk.ExecResult, error) {
		close(started)
		<-ctx.Done()
		return sdk.ExecResult{}, ctx.Err()
	}}
	p, sb, stop := stoppable(t, s)
	go func() {
		<-started
		stop()
	}()
	_, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"x"}}, func(sdk.OutputLine) {})
	if !errors.Is(err, sdk.ErrPluginShutdown) || !strings.Contains(err.Error(), ": Exec: ") {
		t.Errorf("Exec when the plugin goes away: %v", err)
	}
	if _, err := p.Info(context.Background()); !errors.Is(err, sdk.ErrPluginShutdown) {
		t.Errorf("Info after the plugin went away: %v", err)
	}
}

// serve serves opts in-process and returns the host side of the connection
// and a stop function that breaks it.
func serve(t *testing.T, opts sdk.ServeOpts) (plugin.ClientProtocol, func()) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	addr, stopped, err := wire.ServeInProcess(ctx, wire.ServeConfig(opts, hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	client := plugin.NewClient(wire.Reattach(host.ClientConfig(nil, hclog.NewNullLogger()), addr))
	t.Cleanup(client.Kill)
	t.Cleanup(func() { stop(); <-stopped }) // first: Kill's Shutdown would stop the server concurrently
	cp, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	return cp, stop
}

// client serves opts in-process for the host package's catalog and
// dispense functions.
func client(t *testing.T, opts sdk.ServeOpts) plugin.ClientProtocol {
	cp, _ := serve(t, opts)
	return cp
}

// stoppable serves p in-process with a stop function that breaks the
// connection, and creates a sandbox.
func stoppable(t *testing.T, p sdk.SandboxProvider) (sdk.SandboxProvider, sdk.Sandbox, func()) {
	t.Helper()
	cp, stop := serve(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"s": p}})
	c, err := host.DispenseSandbox(cp, "s")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return c, sb, stop
}

// echoAgent emits one text event per line, and a usage event at the end.
type echoAgent struct{ fake.AgentProvider }

func (echoAgent) ParseStream(ctx context.Context, cfg sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	if cfg.Value.RawEquals(cty.StringVal("fail")) {
		return errors.New("parser broke")
	}
	n := int64(0)
	for l := range lines {
		n++
		emit(sdk.Event{Type: sdk.EventText, Text: string(l)})
	}
	emit(sdk.Event{Type: sdk.EventUsage, Usage: &sdk.Usage{OutputTokens: n}})
	return nil
}

func TestFakeParseStream(t *testing.T) {
	t.Parallel()
	a := plugintest.Agent(t, echoAgent{})
	ctx := context.Background()

	// Events flow while input is still open: send a line, see its event.
	lines := make(chan []byte)
	events := make(chan sdk.Event, 16)
	done := make(chan error, 1)
	go func() { done <- a.ParseStream(ctx, sdk.Config{}, lines, func(e sdk.Event) { events <- e }) }()
	for i := range 5 {
		lines <- []byte("line " + strconv.Itoa(i))
		if e := <-events; e.Text != "line "+strconv.Itoa(i) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	close(lines)
	if e := <-events; e.Usage == nil || e.Usage.OutputTokens != 5 {
		t.Errorf("final event %+v", e)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Volume, huge and odd lines, in order.
	const n = 100000
	huge := string(bytes.Repeat([]byte("z"), 5*sdk.MaxLineBytes+3))
	want := []string{"", "\xff\xfe", huge, ""}
	for i := range n {
		want = append(want, strconv.Itoa(i))
	}
	lines = make(chan []byte, 100)
	go func() {
		for _, l := range want {
			lines <- []byte(l)
		}
		close(lines)
	}()
	var got []string
	err := a.ParseStream(ctx, sdk.Config{}, lines, func(e sdk.Event) {
		if e.Type == sdk.EventText {
			got = append(got, e.Text)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %d lines, want %d (equal lengths: %v)", len(got), len(want), len(got) == len(want))
	}

	// Errors from the parser cross the wire.
	lines = make(chan []byte)
	close(lines)
	err = a.ParseStream(ctx, sdk.Config{Value: cty.StringVal("fail")}, lines, func(sdk.Event) {})
	if err == nil || err.Error() != "plugin plugintest: ParseStream: parser broke" {
		t.Errorf("parser error: %v", err)
	}
}

func TestFakeAgentCalls(t *testing.T) {
	t.Parallel()
	a := plugintest.Agent(t, fake.AgentProvider{})
	ctx := context.Background()
	cfg := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"command": cty.ListVal([]cty.Value{cty.StringVal("run"), cty.StringVal("a b")})})}
	cmd, err := a.BuildCommand(ctx, sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Prompt: "hi \xff", Iteration: 1})
	if err != nil || !reflect.DeepEqual(cmd, sdk.Command{Argv: []string{"run", "a b"}, Stdin: []byte("hi \xff")}) {
		t.Errorf("BuildCommand: %#v, %v", cmd, err)
	}
	data, err := a.RewriteSession(ctx, sdk.RewriteSessionRequest{Config: cfg, Data: []byte("x"), FromCwd: "/a", ToCwd: "/b"})
	if err != nil || string(data) != "x" {
		t.Errorf("RewriteSession: %q, %v", data, err)
	}
	if _, err := a.Describe(ctx, cfg); err != nil {
		t.Error(err)
	}
}

// TestMain doubles as a plugin binary: the subprocess test runs it with
// SDK_TEST_SERVE=1.
func TestMain(m *testing.M) {
	if os.Getenv("SDK_TEST_SERVE") == "1" {
		sdk.Serve(sdk.ServeOpts{
			Sandboxes: map[string]sdk.SandboxProvider{
				"fake": &fake.SandboxProvider{Contract: sdk.ContractIsolated},
				"block": &stub{exec: func(ctx context.Context, _ sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
					out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(strconv.Itoa(os.Getpid()))})
					<-ctx.Done()
					return sdk.ExecResult{}, ctx.Err()
				}},
			},
			Agents: map[string]sdk.AgentProvider{"fake": fake.AgentProvider{}},
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestServeSubprocess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SDK_TEST_SERVE=1")
	client := plugin.NewClient(host.ClientConfig(cmd, hclog.New(&hclog.LoggerOptions{Output: io.Discard})))
	defer client.Kill()
	cp, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	if v := client.NegotiatedVersion(); v != wire.ProtocolVersion {
		t.Errorf("negotiated version %d", v)
	}
	ctx := context.Background()
	comps, err := host.CatalogComponents(ctx, cp)
	if err != nil || len(comps) != 3 {
		t.Fatalf("Catalog: %+v, %v", comps, err)
	}

	p, err := host.DispenseSandbox(cp, "fake")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"shell": cty.StringVal("sh")})}
	sb, err := p.Create(ctx, sdk.CreateRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	res, err := sb.Exec(ctx, sdk.ExecRequest{Shell: "echo hello; exit 4"}, func(l sdk.OutputLine) { out = append(out, string(l.Text)) })
	if err != nil || res.ExitCode != 4 || !slices.Equal(out, []string{"hello"}) {
		t.Errorf("Exec: %+v %q %v", res, out, err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Error(err)
	}

	// The plugin dies mid-call: the call fails with ErrPluginShutdown.
	block, err := host.DispenseSandbox(cp, "block")
	if err != nil {
		t.Fatal(err)
	}
	bsb, err := block.Create(ctx, sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bsb.Exec(ctx, sdk.ExecRequest{Argv: []string{"x"}}, func(l sdk.OutputLine) {
		pid, _ := strconv.Atoi(string(l.Text))
		if pid > 0 && pid == client.ReattachConfig().Pid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if !errors.Is(err, sdk.ErrPluginShutdown) || !strings.Contains(err.Error(), ": Exec: ") {
		t.Errorf("Exec when the plugin dies: %v", err)
	}
}

// BenchmarkExecOutput measures output throughput through the gRPC transport
// (100-byte lines).
func BenchmarkExecOutput(b *testing.B) {
	line := bytes.Repeat([]byte("x"), 99)
	const lines = 100000
	s := &stub{exec: func(_ context.Context, _ sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
		for range lines {
			out(sdk.OutputLine{Stream: sdk.Stdout, Text: line})
		}
		return sdk.ExecResult{}, nil
	}}
	sb, err := plugintest.Sandbox(b, s).Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(lines * 100)
	for b.Loop() {
		if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"x"}}, func(sdk.OutputLine) {}); err != nil {
			b.Fatal(err)
		}
	}
}
