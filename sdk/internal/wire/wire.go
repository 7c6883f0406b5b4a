// Package wire holds what both ends of a plugin connection share: the
// go-plugin handshake and glue, message limits and the value encodings
// that need no SDK types. The plugin end is package sdk (Serve), the host
// end package sdk/host.
package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"
	"google.golang.org/grpc"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// ProtocolVersion is the plugin protocol version both ends speak
// (host.Versions lists it).
const ProtocolVersion = 1

// ServeConfig is package sdk's go-plugin server configuration for the
// components opts (an sdk.ServeOpts), set by that package: tests serve
// components in this process through it (ServeInProcess), which is no
// promise of the SDK's.
var ServeConfig func(opts any, logger hclog.Logger) *plugin.ServeConfig

// ServeInProcess serves cfg inside this process until ctx ends (sdk/plugintest
// does, for tests): stopped is closed once the server has stopped.
func ServeInProcess(ctx context.Context, cfg *plugin.ServeConfig) (addr net.Addr, stopped <-chan struct{}, err error) {
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

// Reattach turns the host's client configuration (host.ClientConfig, with
// no command) into one for the server ServeInProcess runs at addr.
func Reattach(cfg *plugin.ClientConfig, addr net.Addr) *plugin.ClientConfig {
	cfg.Plugins = cfg.VersionedPlugins[ProtocolVersion] // a reattached client negotiates no version
	cfg.VersionedPlugins, cfg.AutoMTLS = nil, false
	cfg.Reattach = &plugin.ReattachConfig{
		Protocol: plugin.ProtocolGRPC, ProtocolVersion: ProtocolVersion, Addr: addr, Pid: os.Getpid(), Test: true,
	}
	return cfg
}

// Handshake is the go-plugin handshake shared by sanddune and its plugins.
// The cookie only keeps a plugin binary from being run by hand.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SANDDUNE_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "c4f1d0b7-sanddune-plugin",
}

// PluginName is the one go-plugin plugin every binary serves; the
// components it carries are addressed by kind and name in each call.
const PluginName = "sanddune"

// MaxMsgBytes bounds one gRPC message (session files, stdin, huge events).
const MaxMsgBytes = 256 << 20

// MaxBatchBytes bounds the output lines buffered for one streamed message;
// one message stays below it plus one line.
const MaxBatchBytes = 512 << 10

// CallOpts are added to every client call.
var CallOpts = []grpc.CallOption{grpc.MaxCallRecvMsgSize(MaxMsgBytes), grpc.MaxCallSendMsgSize(MaxMsgBytes)}

// ServerOpts are added to every plugin's gRPC server.
var ServerOpts = []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMsgBytes), grpc.MaxSendMsgSize(MaxMsgBytes)}

// Plugin is the go-plugin glue: Register serves the services on the
// plugin end, Connect builds the host end's connection.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Register func(*grpc.Server)
	Connect  func(done context.Context, cc *grpc.ClientConn) any
}

func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Register == nil {
		return fmt.Errorf("sanddune plugin: no components to serve")
	}
	p.Register(s)
	return nil
}

func (p *Plugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	if p.Connect == nil {
		return nil, fmt.Errorf("sanddune plugin: not a host")
	}
	return p.Connect(ctx, cc), nil
}

// Kind is a component kind's name on the wire ("sandbox", "agent").
func Kind(name string) pluginpb.Kind {
	switch name {
	case "sandbox":
		return pluginpb.Kind_KIND_SANDBOX
	case "agent":
		return pluginpb.Kind_KIND_AGENT
	}
	return pluginpb.Kind_KIND_UNSPECIFIED
}

// KindName is the name of a wire kind ("" when unknown).
func KindName(k pluginpb.Kind) string {
	switch k {
	case pluginpb.Kind_KIND_SANDBOX:
		return "sandbox"
	case pluginpb.Kind_KIND_AGENT:
		return "agent"
	}
	return ""
}

// ToDynamic encodes v as its JSON type and msgpack value (nil for NilVal).
func ToDynamic(v cty.Value) (*pluginpb.DynamicValue, error) {
	if v == cty.NilVal {
		return nil, nil
	}
	ty := v.Type()
	tj, err := ctyjson.MarshalType(ty)
	if err != nil {
		return nil, err
	}
	mp, err := msgpack.Marshal(v, ty)
	if err != nil {
		return nil, err
	}
	return &pluginpb.DynamicValue{TypeJson: tj, Msgpack: mp}, nil
}

// FromDynamic decodes what ToDynamic encoded (NilVal for no value).
func FromDynamic(d *pluginpb.DynamicValue) (cty.Value, error) {
	if d == nil || len(d.TypeJson) == 0 {
		return cty.NilVal, nil
	}
	ty, err := ctyjson.UnmarshalType(d.TypeJson)
	if err != nil {
		return cty.NilVal, err
	}
	return msgpack.Unmarshal(d.Msgpack, ty)
}

// Bytes and Strings convert argv-like lists; Go strings may hold any bytes,
// proto strings must be UTF-8, so they travel as bytes.
func Bytes(ss []string) [][]byte {
	if ss == nil {
		return nil
	}
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func Strings(bs [][]byte) []string {
	if bs == nil {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// BytesMap and StringMap convert env-like maps, as Bytes and Strings do.
func BytesMap(m map[string]string) map[string][]byte {
	if m == nil {
		return nil
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func StringMap(m map[string][]byte) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}
