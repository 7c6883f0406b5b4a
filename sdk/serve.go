package sdk

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// ServeOpts lists the components a plugin binary serves, keyed by type
// label (the HCL label, e.g. "docker"). The key is the component's name on
// the wire: Info.Name as the host sees it is always the key.
type ServeOpts struct {
	Sandboxes map[string]SandboxProvider
	Agents    map[string]AgentProvider
}

func init() {
	wire.ServeConfig = func(opts any, logger hclog.Logger) *plugin.ServeConfig {
		return newServer(opts.(ServeOpts)).config(logger)
	}
}

// Serve serves the components over go-plugin gRPC until the host stops the
// plugin, then waits for the Creates in progress and closes the sandboxes
// the host left open. Call it from main;
// stdout belongs to the handshake, so log to stderr only.
func Serve(opts ServeOpts) {
	logger := DefaultLogger()
	srv := newServer(opts)
	plugin.Serve(srv.config(logger))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.closeAll(ctx); err != nil {
		logger.Error("closing sandboxes left open", "error", err)
	}
}

// config is go-plugin's configuration for serving s.
func (s *server) config(logger hclog.Logger) *plugin.ServeConfig {
	register := func(g *grpc.Server) {
		pluginpb.RegisterProviderServer(g, s)
		pluginpb.RegisterSandboxServer(g, sandboxServer{server: s})
		pluginpb.RegisterAgentServer(g, agentServer{server: s})
	}
	return &plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			wire.ProtocolVersion: {wire.PluginName: &wire.Plugin{Register: register}},
		},
		GRPCServer: func(o []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(o, wire.ServerOpts...)...)
		},
		Logger: logger,
	}
}

// DefaultLogger is the logger plugins should use: JSON to stderr, which the
// host parses and re-emits under the plugin's name. SANDDUNE_PLUGIN_LOG_LEVEL
// sets the level (default info).
func DefaultLogger() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv("SANDDUNE_PLUGIN_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{Output: os.Stderr, JSONFormat: true, Level: level})
}
