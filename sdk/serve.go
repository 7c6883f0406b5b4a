package sdk

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
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

// maxMsgBytes bounds one gRPC message (session files, stdin, huge events).
const maxMsgBytes = 256 << 20

// callOpts are added to every client call.
var callOpts = []grpc.CallOption{grpc.MaxCallRecvMsgSize(maxMsgBytes), grpc.MaxCallSendMsgSize(maxMsgBytes)}

// Serve serves the components over go-plugin gRPC until the host stops the
// plugin, then closes the sandboxes the host left open. Call it from main;
// stdout belongs to the handshake, so log to stderr only.
func Serve(opts ServeOpts) {
	logger := opts.Logger
	if logger == nil {
		logger = DefaultLogger()
	}
	set := ServePluginSet(opts)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: set},
		GRPCServer: func(o []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(o, grpc.MaxRecvMsgSize(maxMsgBytes), grpc.MaxSendMsgSize(maxMsgBytes))...)
		},
		Logger: logger,
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := set[pluginName].(*grpcPlugin).srv.closeAll(ctx); err != nil {
		logger.Error("closing sandboxes left open", "error", err)
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
