package sdk

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// Handshake is the go-plugin handshake shared by sanddune and its plugins.
// The cookie only keeps a plugin binary from being run by hand.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SANDDUNE_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "c4f1d0b7-sanddune-plugin",
}

// pluginName is the one go-plugin plugin every binary serves; the
// components it carries are addressed by kind and name in each call.
const pluginName = "sanddune"

// grpcPlugin is the go-plugin glue: the server side registers the services
// of srv, the client side returns a *conn.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	srv *server
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.srv == nil {
		return fmt.Errorf("sanddune plugin: no components to serve")
	}
	pluginpb.RegisterProviderServer(s, p.srv)
	pluginpb.RegisterSandboxServer(s, sandboxServer{server: p.srv})
	pluginpb.RegisterAgentServer(s, agentServer{server: p.srv})
	return nil
}

func (p *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &conn{
		done:     ctx,
		provider: pluginpb.NewProviderClient(cc),
		sandbox:  pluginpb.NewSandboxClient(cc),
		agent:    pluginpb.NewAgentClient(cc),
	}, nil
}

// ServePluginSet is the go-plugin plugin set that Serve serves. It is for
// in-process tests with go-plugin's test helpers (see sdk/plugintest); the
// set also works on the client side.
func ServePluginSet(opts ServeOpts) plugin.PluginSet {
	return plugin.PluginSet{pluginName: &grpcPlugin{srv: newServer(opts)}}
}

// ClientPluginSets is what the host passes as plugin.ClientConfig's
// VersionedPlugins.
func ClientPluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{ProtocolVersion: {pluginName: &grpcPlugin{}}}
}

// Component is one entry of a plugin's catalog.
type Component struct {
	Info Info
	// Commands, Resources, Recover: the component implements
	// CommandProvider, ResourceLister, SandboxRecoverer.
	Commands  bool
	Resources bool
	Recover   bool
}

// Catalog lists the components a plugin serves.
func Catalog(ctx context.Context, cp plugin.ClientProtocol) ([]Info, error) {
	cs, err := CatalogComponents(ctx, cp)
	if err != nil {
		return nil, err
	}
	infos := make([]Info, len(cs))
	for i, c := range cs {
		infos[i] = c.Info
	}
	return infos, nil
}

// CatalogComponents lists the components a plugin serves with the optional
// interfaces they implement.
func CatalogComponents(ctx context.Context, cp plugin.ClientProtocol) ([]Component, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	resp, err := c.provider.Catalog(ctx, &pluginpb.CatalogRequest{}, callOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Catalog", err)
	}
	var out []Component
	for _, comp := range resp.Components {
		out = append(out, Component{
			Info: fromInfo(comp.Info), Commands: comp.Commands, Resources: comp.Resources, Recover: comp.Recover,
		})
	}
	return out, nil
}

// DispenseSandbox returns the sandbox provider name served by the plugin.
// It also implements CommandProvider, ResourceLister and SandboxRecoverer;
// their methods return an error wrapping ErrNotSupported when the plugin
// lacks them.
func DispenseSandbox(cp plugin.ClientProtocol, name string) (SandboxProvider, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	c.component = name
	return &sandboxProviderClient{providerClient{conn: c, ref: &pluginpb.ComponentRef{Kind: pluginpb.Kind_KIND_SANDBOX, Name: name}}}, nil
}

// DispenseAgent returns the agent provider name served by the plugin.
func DispenseAgent(cp plugin.ClientProtocol, name string) (AgentProvider, error) {
	c, err := dispense(cp)
	if err != nil {
		return nil, err
	}
	c.component = name
	return &agentProviderClient{providerClient{conn: c, ref: &pluginpb.ComponentRef{Kind: pluginpb.Kind_KIND_AGENT, Name: name}}}, nil
}

func dispense(cp plugin.ClientProtocol) (*conn, error) {
	raw, err := cp.Dispense(pluginName)
	if err != nil {
		return nil, err
	}
	c, ok := raw.(*conn)
	if !ok {
		return nil, fmt.Errorf("plugin dispensed %T, not a sanddune plugin connection", raw)
	}
	return c, nil
}
