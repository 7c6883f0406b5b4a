// Package host is the host end of a plugin connection: what sanddune (and
// the conformance kits) use to talk to a plugin that sdk.Serve serves. It
// hands out go-plugin's client configuration and turns a connected
// go-plugin client into the SDK's Go interfaces, so the rest of the host
// never sees gRPC or protobuf. Plugin authors do not need this package.
package host

import (
	"context"
	"fmt"
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

func pluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{wire.ProtocolVersion: {wire.PluginName: &wire.Plugin{Connect: connect}}}
}

// Versions lists the plugin protocol versions the host speaks, ascending.
func Versions() []int { return []int{wire.ProtocolVersion} }

func connect(done context.Context, cc *grpc.ClientConn) any {
	return &conn{
		done:     done,
		provider: pluginpb.NewProviderClient(cc),
		sandbox:  pluginpb.NewSandboxClient(cc),
		agent:    pluginpb.NewAgentClient(cc),
	}
}

// CatalogComponents lists the components a plugin serves.
func CatalogComponents(ctx context.Context, cp plugin.ClientProtocol) ([]sdk.Info, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	resp, err := c.provider.Catalog(ctx, &pluginpb.CatalogRequest{}, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Catalog", err)
	}
	var out []sdk.Info
	for _, comp := range resp.Components {
		out = append(out, fromInfo(comp.Info))
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
