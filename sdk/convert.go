package sdk

import (
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// Conversions of the plugin end: requests from the wire, responses to it.
// sdk/host converts the other way.

func fromConfig(d *pluginpb.DynamicValue) (Config, error) {
	v, err := wire.FromDynamic(d)
	if err != nil {
		return Config{}, fmt.Errorf("decoding config: %w", err)
	}
	return Config{Value: v}, nil
}

func toSchema(s Schema) (*pluginpb.Schema, error) {
	out := &pluginpb.Schema{}
	for _, a := range s.Attributes {
		tj, err := ctyjson.MarshalType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		var def *pluginpb.DynamicValue
		if a.Default != cty.NilVal {
			mp, err := msgpack.Marshal(a.Default, a.Type)
			if err != nil {
				return nil, fmt.Errorf("attribute %q default: %w", a.Name, err)
			}
			def = &pluginpb.DynamicValue{TypeJson: tj, Msgpack: mp}
		}
		out.Attributes = append(out.Attributes, &pluginpb.Attribute{
			Name: a.Name, TypeJson: tj, Required: a.Required, Default: def, Description: a.Description,
		})
	}
	for _, b := range s.Blocks {
		body, err := toSchema(b.Body)
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", b.TypeName, err)
		}
		out.Blocks = append(out.Blocks, &pluginpb.NestedBlock{
			TypeName: b.TypeName, Nesting: pluginpb.NestedBlock_Nesting(b.Nesting),
			Required: b.Required, Body: body, Description: b.Description,
		})
	}
	return out, nil
}

func toInfo(i Info) *pluginpb.ComponentInfo {
	out := &pluginpb.ComponentInfo{
		Name: i.Name, Kind: wire.Kind(string(i.Kind)), Version: i.Version, Description: i.Description,
	}
	for _, v := range i.ProtocolVersions {
		out.ProtocolVersions = append(out.ProtocolVersions, int64(v))
	}
	if c := i.Sandbox; c != nil {
		out.Sandbox = &pluginpb.SandboxCapabilities{
			Contract: string(c.Contract), NetworkNone: c.NetworkNone, Tty: c.TTY, Sudo: c.Sudo, Confines: c.Confines, Egress: c.Egress, Mounts: c.Mounts,
		}
	}
	return out
}

func toDiagnostics(ds Diagnostics) []*pluginpb.Diagnostic {
	var out []*pluginpb.Diagnostic
	for _, d := range ds {
		out = append(out, &pluginpb.Diagnostic{
			Severity: pluginpb.Diagnostic_Severity(d.Severity), Summary: d.Summary,
			Detail: d.Detail, Attribute: d.Attribute,
		})
	}
	return out
}

func fromExecRequest(r *pluginpb.ExecRequest) ExecRequest {
	return ExecRequest{
		Argv: wire.Strings(r.Argv), Shell: string(r.Shell), Cwd: string(r.Cwd), Env: wire.StringMap(r.Env),
		Sudo: r.Sudo, Stdin: r.Stdin, Timeout: time.Duration(r.TimeoutNanos),
	}
}

func fromWindowSize(s *pluginpb.WindowSize) WindowSize {
	return WindowSize{Rows: uint16(s.GetRows()), Cols: uint16(s.GetCols())}
}

func fromMounts(ms []*pluginpb.Mount) []Mount {
	var out []Mount
	for _, m := range ms {
		out = append(out, Mount{HostPath: m.HostPath, SandboxPath: m.SandboxPath, ReadOnly: m.ReadOnly})
	}
	return out
}

func toMounts(ms []Mount) []*pluginpb.Mount {
	var out []*pluginpb.Mount
	for _, m := range ms {
		out = append(out, &pluginpb.Mount{HostPath: m.HostPath, SandboxPath: m.SandboxPath, ReadOnly: m.ReadOnly})
	}
	return out
}

func fromEgressPolicy(p *pluginpb.EgressPolicy) *EgressPolicy {
	if p == nil {
		return nil
	}
	return &EgressPolicy{Allow: p.Allow, Hosts: p.Hosts}
}

func toEgressDenial(d EgressDenial) *pluginpb.EgressDenial {
	return &pluginpb.EgressDenial{Host: []byte(d.Host), Port: int32(d.Port), Proto: d.Proto, Reason: d.Reason}
}

func toSandboxInfo(i SandboxInfo) *pluginpb.SandboxInfo {
	pi := &pluginpb.SandboxInfo{Id: i.ID, RepoPath: i.RepoPath, HomePath: i.HomePath, Mounts: toMounts(i.Mounts)}
	if i.UID != nil {
		uid := int32(*i.UID)
		pi.Uid = &uid
	}
	return pi
}

func toDescription(d AgentDescription) *pluginpb.AgentDescription {
	out := &pluginpb.AgentDescription{Env: d.Env, Resume: d.Resume, Fork: d.Fork, BypassesPermissions: d.BypassesPermissions, CaptureSessions: d.CaptureSessions, Endpoints: d.Endpoints}
	for _, g := range d.RequiredEnv {
		out.RequiredEnv = append(out.RequiredEnv, &pluginpb.StringList{Values: g})
	}
	if s := d.Sessions; s != nil {
		out.Sessions = &pluginpb.SessionStorage{PathPattern: s.PathPattern}
	}
	return out
}

func toEvent(e Event) *pluginpb.Event {
	out := &pluginpb.Event{
		Type: string(e.Type), Text: []byte(e.Text), ToolName: []byte(e.ToolName),
		ToolArg: []byte(e.ToolArg), SessionId: []byte(e.SessionID),
	}
	if u := e.Usage; u != nil {
		out.Usage = &pluginpb.Usage{
			InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
		}
	}
	return out
}
