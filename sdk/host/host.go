// Package host is the host end of a plugin connection: what sanddune (and
// the conformance kits) use to talk to a plugin that sdk.Serve serves. It
// hands out go-plugin's client configuration and turns a connected
// go-plugin client into the SDK's Go interfaces, so the rest of the host
// never sees gRPC or protobuf. Plugin authors do not need this package.
package host

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// ClientConfig is the go-plugin client configuration for the plugin binary
// that cmd starts: sanddune's handshake, the protocol versions the host
// speaks, gRPC with AutoMTLS. The caller adds what else it needs (a
// SecureConfig, stderr, a start timeout).
func ClientConfig(cmd *exec.Cmd, logger hclog.Logger) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: pluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           logger,
	}
}

// pluginSets is the plugin set of one client: its connections (one per
// dispensed component) share what the host asks once (asked).
func pluginSets() map[int]plugin.PluginSet {
	a := &asked{}
	connect := func(done context.Context, cc *grpc.ClientConn) any { return connect(done, cc, a) }
	return map[int]plugin.PluginSet{sdk.ProtocolVersion: {wire.PluginName: &wire.Plugin{Connect: connect}}}
}

// Versions lists the plugin protocol versions the host speaks, ascending.
func Versions() []int { return []int{sdk.ProtocolVersion} }

// InProcess is the client configuration for a plugin that
// sdk.ServeInProcess serves at addr in this process.
func InProcess(addr net.Addr, logger hclog.Logger) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig: wire.Handshake,
		Plugins:         pluginSets()[sdk.ProtocolVersion], // a reattached client negotiates no version
		Reattach: &plugin.ReattachConfig{
			Protocol: plugin.ProtocolGRPC, ProtocolVersion: sdk.ProtocolVersion, Addr: addr, Pid: os.Getpid(), Test: true,
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
	}
}

func connect(done context.Context, cc *grpc.ClientConn, a *asked) any {
	return &conn{
		done:     done,
		asked:    a,
		provider: pluginpb.NewProviderClient(cc),
		sandbox:  pluginpb.NewSandboxClient(cc),
		agent:    pluginpb.NewAgentClient(cc),
	}
}

// Component is one entry of a plugin's catalog.
type Component struct {
	Info sdk.Info
	// Commands, Resources, Recover: the component implements
	// sdk.CommandProvider, sdk.ResourceLister, sdk.SandboxRecoverer.
	Commands  bool
	Resources bool
	Recover   bool
	// CreateProgress: the plugin streams progress reports during Create
	// (sdk.CreateRequest.Progress).
	CreateProgress bool
}

// CatalogComponents lists the components a plugin serves with the optional
// interfaces they implement.
func CatalogComponents(ctx context.Context, cp plugin.ClientProtocol) ([]Component, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	resp, err := c.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []Component
	for _, comp := range resp.Components {
		out = append(out, Component{
			Info: fromInfo(comp.Info), Commands: comp.Commands, Resources: comp.Resources, Recover: comp.Recover,
			CreateProgress: comp.CreateProgress,
		})
	}
	return out, nil
}

// DispenseSandbox returns the sandbox provider name served by the plugin.
// It also implements sdk.CommandProvider, sdk.ResourceLister and
// sdk.SandboxRecoverer; their methods return an error wrapping
// sdk.ErrNotSupported when the plugin lacks them.
func DispenseSandbox(cp plugin.ClientProtocol, name string) (sdk.SandboxProvider, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	c.component = name
	return &sandboxProviderClient{providerClient: providerClient{conn: c, ref: &pluginpb.ComponentRef{Kind: pluginpb.Kind_KIND_SANDBOX, Name: name}}}, nil
}

// DispenseAgent returns the agent provider name served by the plugin. It
// also implements sdk.CwdEncoder, whose method returns an error wrapping
// sdk.ErrNotSupported when the plugin lacks it.
func DispenseAgent(cp plugin.ClientProtocol, name string) (sdk.AgentProvider, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	c.component = name
	return &agentProviderClient{providerClient: providerClient{conn: c, ref: &pluginpb.ComponentRef{Kind: pluginpb.Kind_KIND_AGENT, Name: name}}}, nil
}

func dispense(cp plugin.ClientProtocol) (*conn, error) {
	raw, err := cp.Dispense(wire.PluginName)
	if err != nil {
		return nil, err
	}
	c, ok := raw.(*conn)
	if !ok {
		return nil, fmt.Errorf("plugin dispensed %T, not a sanddune plugin connection", raw)
	}
	return c, nil
}
