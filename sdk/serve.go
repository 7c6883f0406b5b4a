package sdk

import (
	"context"
	"errors"
	"net"
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
	// Logger receives go-plugin's own logs; nil means DefaultLogger().
	Logger hclog.Logger
}

// Serve serves the components over go-plugin gRPC until the host stops the
// plugin, then waits for the Creates in progress and closes the sandboxes
// the host left open. Call it from main;
// stdout belongs to the handshake, so log to stderr only.
func Serve(opts ServeOpts) {
	logger := opts.logger()
	srv := newServer(opts)
	plugin.Serve(srv.config(logger))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.closeAll(ctx); err != nil {
		logger.Error("closing sandboxes left open", "error", err)
	}
}

// ServeInProcess serves the components like Serve, but inside this process
// and until ctx ends: for tests, which connect to addr through sdk/host
// (sdk/plugintest does). stopped is closed once the server has stopped.
func ServeInProcess(ctx context.Context, opts ServeOpts) (addr net.Addr, stopped <-chan struct{}, err error) {
	cfg := newServer(opts).config(opts.logger())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go plugin.Serve(cfg)
	select {
	case rc := <-reattach:
		return rc.Addr, closed, nil
	case <-closed:
		return nil, nil, errors.New("the plugin server stopped before serving")
	}
}

func (o ServeOpts) logger() hclog.Logger {
	if o.Logger == nil {
		return DefaultLogger()
	}
	return o.Logger
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
			ProtocolVersion: {wire.PluginName: &wire.Plugin{Register: register}},
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
