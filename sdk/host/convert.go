package host

import (
	"fmt"

	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// Conversions of the host end: requests to the wire, responses from it.
// Package sdk converts the other way.

func toConfig(c sdk.Config) (*pluginpb.DynamicValue, error) {
	d, err := wire.ToDynamic(c.Value)
	if err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	return d, nil
}

func fromSchema(s *pluginpb.Schema) (sdk.Schema, error) {
	var out sdk.Schema
	for _, a := range s.GetAttributes() {
		ty, err := ctyjson.UnmarshalType(a.TypeJson)
		if err != nil {
			return sdk.Schema{}, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		def, err := wire.FromDynamic(a.Default)
		if err != nil {
			return sdk.Schema{}, fmt.Errorf("attribute %q default: %w", a.Name, err)
		}
		out.Attributes = append(out.Attributes, sdk.Attribute{
			Name: a.Name, Type: ty, Required: a.Required, Default: def, Description: a.Description,
		})
	}
	for _, b := range s.GetBlocks() {
		body, err := fromSchema(b.Body)
		if err != nil {
			return sdk.Schema{}, fmt.Errorf("block %q: %w", b.TypeName, err)
		}
		out.Blocks = append(out.Blocks, sdk.NestedBlock{
			TypeName: b.TypeName, Nesting: sdk.Nesting(b.Nesting),
			Required: b.Required, Body: body, Description: b.Description,
		})
	}
	return out, nil
}

func fromInfo(i *pluginpb.ComponentInfo) sdk.Info {
	out := sdk.Info{Name: i.GetName(), Kind: sdk.Kind(wire.KindName(i.GetKind())), Version: i.GetVersion(), Description: i.GetDescription()}
	for _, v := range i.GetProtocolVersions() {
		out.ProtocolVersions = append(out.ProtocolVersions, int(v))
	}
	if c := i.GetSandbox(); c != nil {
		out.Sandbox = &sdk.SandboxCapabilities{
			Contract: sdk.Contract(c.Contract), NetworkNone: c.NetworkNone, TTY: c.Tty, Sudo: c.Sudo, Confines: c.Confines, Egress: c.Egress, Mounts: c.Mounts,
		}
	}
	return out
}

func fromDiagnostics(ds []*pluginpb.Diagnostic) sdk.Diagnostics {
	var out sdk.Diagnostics
	for _, d := range ds {
		out = append(out, sdk.Diagnostic{
			Severity: sdk.Severity(d.Severity), Summary: d.Summary, Detail: d.Detail, Attribute: d.Attribute,
		})
	}
	return out
}

func toExecRequest(handle string, r sdk.ExecRequest) *pluginpb.ExecRequest {
	return &pluginpb.ExecRequest{
		Handle: handle, Argv: wire.Bytes(r.Argv), Shell: []byte(r.Shell), Cwd: []byte(r.Cwd), Env: wire.BytesMap(r.Env),
		Sudo: r.Sudo, Stdin: r.Stdin, TimeoutNanos: int64(r.Timeout),
	}
}

func toWindowSize(s sdk.WindowSize) *pluginpb.WindowSize {
	return &pluginpb.WindowSize{Rows: uint32(s.Rows), Cols: uint32(s.Cols)}
}

func toMounts(ms []sdk.Mount) []*pluginpb.Mount {
	var out []*pluginpb.Mount
	for _, m := range ms {
		out = append(out, &pluginpb.Mount{HostPath: m.HostPath, SandboxPath: m.SandboxPath, ReadOnly: m.ReadOnly})
	}
	return out
}

func fromMounts(ms []*pluginpb.Mount) []sdk.Mount {
	var out []sdk.Mount
	for _, m := range ms {
		out = append(out, sdk.Mount{HostPath: m.HostPath, SandboxPath: m.SandboxPath, ReadOnly: m.ReadOnly})
	}
	return out
}

func toEgressPolicy(p *sdk.EgressPolicy) *pluginpb.EgressPolicy {
	if p == nil {
		return nil
	}
	return &pluginpb.EgressPolicy{Allow: p.Allow, Hosts: p.Hosts}
}

func fromEgressDenial(d *pluginpb.EgressDenial) sdk.EgressDenial {
	return sdk.EgressDenial{Host: string(d.Host), Port: int(d.Port), Proto: d.Proto, Reason: d.Reason}
}

func fromSandboxInfo(i *pluginpb.SandboxInfo) sdk.SandboxInfo {
	si := sdk.SandboxInfo{ID: i.GetId(), RepoPath: i.GetRepoPath(), HomePath: i.GetHomePath(), Mounts: fromMounts(i.GetMounts())}
	if i.Uid != nil {
		uid := int(i.GetUid())
		si.UID = &uid
	}
	return si
}

func fromDescription(d *pluginpb.AgentDescription) sdk.AgentDescription {
	out := sdk.AgentDescription{Env: d.GetEnv(), Resume: d.GetResume(), Fork: d.GetFork(), BypassesPermissions: d.GetBypassesPermissions(), CaptureSessions: d.GetCaptureSessions(), Endpoints: d.GetEndpoints()}
	for _, g := range d.GetRequiredEnv() {
		out.RequiredEnv = append(out.RequiredEnv, g.Values)
	}
	if s := d.GetSessions(); s != nil {
		out.Sessions = &sdk.SessionStorage{PathPattern: s.PathPattern}
	}
	return out
}

func fromEvent(e *pluginpb.Event) sdk.Event {
	out := sdk.Event{
		Type: sdk.EventType(e.Type), Text: string(e.Text), ToolName: string(e.ToolName),
		ToolArg: string(e.ToolArg), SessionID: string(e.SessionId),
	}
	if u := e.Usage; u != nil {
		out.Usage = &sdk.Usage{
			InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
		}
	}
	return out
}
