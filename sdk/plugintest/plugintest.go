// Package plugintest connects providers to their client-side adapters over a
// real in-process gRPC connection, so tests exercise the wire protocol
// (protobuf, streaming, error mapping) without building plugin binaries.
// Binary starts a plugin binary — in any language — the way sanddune does.
package plugintest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
)

// name is the component name the providers are served under.
const name = "plugintest"

// Sandbox serves p over gRPC, as component "plugintest", and returns the
// host-side adapter. The connection closes when the test ends.
func Sandbox(t testing.TB, p sdk.SandboxProvider) sdk.SandboxProvider {
	t.Helper()
	client := connect(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{name: p}})
	sp, err := host.DispenseSandbox(client, name)
	if err != nil {
		t.Fatalf("plugintest: dispense sandbox: %v", err)
	}
	return sp
}

// Agent serves p over gRPC and returns the host-side adapter.
func Agent(t testing.TB, p sdk.AgentProvider) sdk.AgentProvider {
	t.Helper()
	client := connect(t, sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{name: p}})
	ap, err := host.DispenseAgent(client, name)
	if err != nil {
		t.Fatalf("plugintest: dispense agent: %v", err)
	}
	return ap
}

// Client serves opts over gRPC and returns the host side of the connection,
// for host.Catalog and the host.Dispense functions.
func Client(t testing.TB, opts sdk.ServeOpts) plugin.ClientProtocol {
	t.Helper()
	return connect(t, opts)
}

// connect serves opts in-process (sdk.ServeInProcess) and attaches a
// client to it. go-plugin's own logs are dropped unless
// SANDDUNE_TEST_PLUGIN_LOG sets a level (e.g. debug, trace), so that the
// kits' output is the tests' own.
func connect(t testing.TB, opts sdk.ServeOpts) plugin.ClientProtocol {
	t.Helper()
	logger := testLogger()
	if opts.Logger == nil {
		opts.Logger = logger
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, stopped, err := sdk.ServeInProcess(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("plugintest: %v", err)
	}
	client := plugin.NewClient(host.InProcess(addr, logger))
	rpc, err := client.Client()
	if err != nil {
		cancel()
		t.Fatalf("plugintest: connecting to the plugin: %v", err)
	}
	t.Cleanup(func() {
		_ = rpc.Close()
		cancel()
		<-stopped
	})
	return rpc
}

// Binary starts the plugin binary at path as sanddune does (go-plugin
// handshake, AutoMTLS) and returns the host side of the connection. The
// plugin is stopped when the test ends; its stderr is logged if the test
// failed.
func Binary(t testing.TB, path string) plugin.ClientProtocol {
	t.Helper()
	logger := testLogger()
	stderr := &lineLog{}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  host.Handshake,
		VersionedPlugins: host.PluginSets(),
		Cmd:              exec.Command(path),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           logger,
		Stderr:           stderr,
		SyncStderr:       stderr,
	})
	started := false
	t.Cleanup(func() {
		client.Kill()
		if started && t.Failed() && stderr.String() != "" {
			t.Logf("%s stderr:\n%s", path, stderr)
		}
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		t.Fatalf("plugintest: starting %s: %v\nits stderr:\n%s", path, err, stderr.String())
	}
	started = true
	return rpc
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
