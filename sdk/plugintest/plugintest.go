// Package plugintest connects providers to their client-side adapters over a
// real in-process gRPC connection, so tests exercise the wire protocol
// (protobuf, streaming, error mapping) without building plugin binaries.
// Binary starts a plugin binary — in any language — the way sanddune does.
//
// Its functions, and the conformance kits built on them, report to a T:
// *testing.T is one, and so is the runner of `sanddune plugins test`, which
// runs the kits without the testing package.
package plugintest

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// T is what a check reports to; *testing.T and testing.TB satisfy it.
// Subtests go through Run.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Run runs f as the subtest name of t through t's own Run method (that of
// *testing.T, or of any T whose Run(string, func(X)) bool takes an X that
// is a T) and reports whether it passed.
func Run(t T, name string, f func(T)) bool {
	t.Helper()
	m := reflect.ValueOf(t).MethodByName("Run")
	if !m.IsValid() || m.Type().NumIn() != 2 || m.Type().In(1).Kind() != reflect.Func || m.Type().In(1).NumIn() != 1 {
		t.Fatalf("plugintest: %T has no Run(string, func(T)) method for subtests", t)
	}
	sub := reflect.MakeFunc(m.Type().In(1), func(args []reflect.Value) []reflect.Value {
		f(args[0].Interface().(T))
		return nil
	})
	out := m.Call([]reflect.Value{reflect.ValueOf(name), sub})
	return len(out) == 1 && out[0].Kind() == reflect.Bool && out[0].Bool()
}

// name is the component name Sandbox and Agent serve providers under.
const name = "plugintest"

// Sandbox serves p over gRPC, as component "plugintest", and returns the
// host-side adapter. The connection closes when the test ends.
func Sandbox(t T, p sdk.SandboxProvider) sdk.SandboxProvider {
	t.Helper()
	sp, err := host.DispenseSandbox(connect(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{name: p}}), name)
	if err != nil {
		t.Fatalf("plugintest: dispense sandbox: %v", err)
	}
	return sp
}

// Agent serves p over gRPC, as component "plugintest", and returns the
// host-side adapter.
func Agent(t T, p sdk.AgentProvider) sdk.AgentProvider {
	t.Helper()
	ap, err := host.DispenseAgent(connect(t, sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{name: p}}), name)
	if err != nil {
		t.Fatalf("plugintest: dispense agent: %v", err)
	}
	return ap
}

// connect serves opts in-process and attaches a
// client to it. go-plugin's own logs are dropped unless
// SANDDUNE_TEST_PLUGIN_LOG sets a level (e.g. debug, trace), so that the
// kits' output is the tests' own.
func connect(t T, opts sdk.ServeOpts) plugin.ClientProtocol {
	t.Helper()
	logger := testLogger()
	ctx, cancel := context.WithCancel(context.Background())
	addr, stopped, err := wire.ServeInProcess(ctx, wire.ServeConfig(opts, logger))
	if err != nil {
		cancel()
		t.Fatalf("plugintest: %v", err)
	}
	client := plugin.NewClient(wire.Reattach(host.ClientConfig(nil, logger), addr))
	rpc, err := client.Client()
	if err != nil {
		cancel()
		t.Fatalf("plugintest: connecting to the plugin: %v", err)
	}
	t.Cleanup(func() {
		// The server stops by ctx alone: the Shutdown call Close sends would
		// stop it a second time, concurrently (a data race in go-plugin).
		cancel()
		<-stopped
		_ = rpc.Close()
	})
	return rpc
}

// Binary starts the plugin binary at path as sanddune does (go-plugin
// handshake, AutoMTLS) and returns what it serves: its components by name,
// connected. The plugin is stopped when the test ends; its stderr goes to
// the test's log (which go test shows for a failed test, or with -v).
func Binary(t T, path string) (sandboxes map[string]sdk.SandboxProvider, agents map[string]sdk.AgentProvider) {
	t.Helper()
	logger := testLogger()
	stderr := &lineLog{}
	cfg := host.ClientConfig(exec.Command(path), logger)
	cfg.Stderr, cfg.SyncStderr = stderr, stderr
	client := plugin.NewClient(cfg)
	started := false
	t.Cleanup(func() {
		client.Kill()
		if started && stderr.String() != "" {
			t.Logf("%s stderr:\n%s", path, stderr)
		}
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		t.Fatalf("plugintest: starting %s: %v\nits stderr:\n%s", path, err, stderr.String())
	}
	started = true
	comps, err := host.CatalogComponents(context.Background(), rpc)
	if err != nil {
		t.Fatalf("plugintest: the catalog of %s: %v", path, err)
	}
	sandboxes, agents = map[string]sdk.SandboxProvider{}, map[string]sdk.AgentProvider{}
	for _, c := range comps {
		switch c.Kind {
		case sdk.KindSandbox:
			sandboxes[c.Name], err = host.DispenseSandbox(rpc, c.Name)
		case sdk.KindAgent:
			agents[c.Name], err = host.DispenseAgent(rpc, c.Name)
		default:
			t.Errorf("plugintest: %s serves %q of unknown kind %q", path, c.Name, c.Kind)
		}
		if err != nil {
			t.Fatalf("plugintest: dispensing %s of %s: %v", c.Name, path, err)
		}
	}
	return sandboxes, agents
}

// lineLog keeps what a plugin writes on stderr.
type lineLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("SANDDUNE_TEST_PLUGIN_LOG"))
	if level == hclog.NoLevel {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: "plugintest", Level: level, Output: os.Stderr})
}
