// Package plugintest connects providers to their client-side adapters over a
// real in-process gRPC connection, so tests exercise the wire protocol
// (protobuf, streaming, error mapping) without building plugin binaries.
package plugintest

import (
	"context"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/missingstudio/sanddune/sdk"
)

// nameOf is the name p is served under: its own Info name, else "plugintest".
func nameOf(p sdk.Provider) string {
	if info, err := p.Info(context.Background()); err == nil && info.Name != "" {
		return info.Name
	}
	return "plugintest"
}

// Sandbox serves p over gRPC and returns the host-side adapter. The
// connection closes when the test ends.
func Sandbox(t testing.TB, p sdk.SandboxProvider) sdk.SandboxProvider {
	t.Helper()
	name := nameOf(p)
	client := connect(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{name: p}})
	sp, err := sdk.DispenseSandbox(client, name)
	if err != nil {
		t.Fatalf("plugintest: dispense sandbox: %v", err)
	}
	return sp
}

// Agent serves p over gRPC and returns the host-side adapter.
func Agent(t testing.TB, p sdk.AgentProvider) sdk.AgentProvider {
	t.Helper()
	name := nameOf(p)
	client := connect(t, sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{name: p}})
	ap, err := sdk.DispenseAgent(client, name)
	if err != nil {
		t.Fatalf("plugintest: dispense agent: %v", err)
	}
	return ap
}

// Client serves opts over gRPC and returns the host side of the connection,
// for sdk.Catalog and the Dispense functions.
func Client(t testing.TB, opts sdk.ServeOpts) plugin.ClientProtocol {
	t.Helper()
	return connect(t, opts)
}

func connect(t testing.TB, opts sdk.ServeOpts) plugin.ClientProtocol {
	client, _ := plugin.TestPluginGRPCConn(t, false, sdk.ServePluginSet(opts))
	// Close also stops the server (go-plugin's controller Shutdown).
	t.Cleanup(func() { _ = client.Close() })
	return client
}
