package sdk

import (
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// Conversions between the SDK's Go types and the wire types.

func toDynamic(v cty.Value) (*pluginpb.DynamicValue, error) {
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

func fromDynamic(d *pluginpb.DynamicValue) (cty.Value, error) {
	if d == nil || len(d.TypeJson) == 0 {
		return cty.NilVal, nil
	}
	ty, err := ctyjson.UnmarshalType(d.TypeJson)
	if err != nil {
		return cty.NilVal, err
	}
	return msgpack.Unmarshal(d.Msgpack, ty)
}

func toConfig(c Config) (*pluginpb.DynamicValue, error) {
	d, err := toDynamic(c.Value)
	if err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	return d, nil
}

func fromConfig(d *pluginpb.DynamicValue) (Config, error) {
	v, err := fromDynamic(d)
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

func fromSchema(s *pluginpb.Schema) (Schema, error) {
	var out Schema
	for _, a := range s.GetAttributes() {
		ty, err := ctyjson.UnmarshalType(a.TypeJson)
		if err != nil {
			return Schema{}, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		def, err := fromDynamic(a.Default)
		if err != nil {
			return Schema{}, fmt.Errorf("attribute %q default: %w", a.Name, err)
		}
		out.Attributes = append(out.Attributes, Attribute{
			Name: a.Name, Type: ty, Required: a.Required, Default: def, Description: a.Description,
		})
	}
	for _, b := range s.GetBlocks() {
		body, err := fromSchema(b.Body)
		if err != nil {
			return Schema{}, fmt.Errorf("block %q: %w", b.TypeName, err)
		}
		out.Blocks = append(out.Blocks, NestedBlock{
			TypeName: b.TypeName, Nesting: Nesting(b.Nesting),
			Required: b.Required, Body: body, Description: b.Description,
		})
	}
	return out, nil
}

var kinds = map[Kind]pluginpb.Kind{KindSandbox: pluginpb.Kind_KIND_SANDBOX, KindAgent: pluginpb.Kind_KIND_AGENT}

func toKind(k Kind) pluginpb.Kind { return kinds[k] }

func fromKind(k pluginpb.Kind) Kind {
	for sk, pk := range kinds {
		if pk == k {
			return sk
		}
	}
	return ""
}

func toInfo(i Info) *pluginpb.ComponentInfo {
	out := &pluginpb.ComponentInfo{
		Name: i.Name, Kind: toKind(i.Kind), Version: i.Version, Description: i.Description,
	}
	for _, v := range i.ProtocolVersions {
		out.ProtocolVersions = append(out.ProtocolVersions, int64(v))
	}
	if c := i.Sandbox; c != nil {
		out.Sandbox = &pluginpb.SandboxCapabilities{
			Contract: string(c.Contract), NetworkNone: c.NetworkNone, Tty: c.TTY, Sudo: c.Sudo, Confines: c.Confines,
		}
	}
	return out
}

func fromInfo(i *pluginpb.ComponentInfo) Info {
	out := Info{Name: i.GetName(), Kind: fromKind(i.GetKind()), Version: i.GetVersion(), Description: i.GetDescription()}
	for _, v := range i.GetProtocolVersions() {
		out.ProtocolVersions = append(out.ProtocolVersions, int(v))
	}
	if c := i.GetSandbox(); c != nil {
		out.Sandbox = &SandboxCapabilities{
			Contract: Contract(c.Contract), NetworkNone: c.NetworkNone, TTY: c.Tty, Sudo: c.Sudo, Confines: c.Confines,
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

func fromDiagnostics(ds []*pluginpb.Diagnostic) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		out = append(out, Diagnostic{
			Severity: Severity(d.Severity), Summary: d.Summary, Detail: d.Detail, Attribute: d.Attribute,
		})
	}
	return out
}

func toExecRequest(handle string, r ExecRequest) *pluginpb.ExecRequest {
	return &pluginpb.ExecRequest{
		Handle: handle, Argv: toBytesList(r.Argv), Shell: []byte(r.Shell), Cwd: []byte(r.Cwd), Env: toBytesMap(r.Env),
		Sudo: r.Sudo, Stdin: r.Stdin, TimeoutNanos: int64(r.Timeout),
	}
}

func fromExecRequest(r *pluginpb.ExecRequest) ExecRequest {
	return ExecRequest{
		Argv: fromBytesList(r.Argv), Shell: string(r.Shell), Cwd: string(r.Cwd), Env: fromBytesMap(r.Env),
		Sudo: r.Sudo, Stdin: r.Stdin, Timeout: time.Duration(r.TimeoutNanos),
	}
}

func toWindowSize(s WindowSize) *pluginpb.WindowSize {
	return &pluginpb.WindowSize{Rows: uint32(s.Rows), Cols: uint32(s.Cols)}
}

func fromWindowSize(s *pluginpb.WindowSize) WindowSize {
	return WindowSize{Rows: uint16(s.GetRows()), Cols: uint16(s.GetCols())}
}

func toMounts(ms []Mount) []*pluginpb.Mount {
	var out []*pluginpb.Mount
	for _, m := range ms {
		out = append(out, &pluginpb.Mount{HostPath: m.HostPath, SandboxPath: m.SandboxPath, ReadOnly: m.ReadOnly})
	}
	return out
}

func fromMounts(ms []*pluginpb.Mount) []Mount {
	var out []Mount
	for _, m := range ms {
		out = append(out, Mount{HostPath: m.HostPath, SandboxPath: m.SandboxPath, ReadOnly: m.ReadOnly})
	}
	return out
}

func toSandboxInfo(i SandboxInfo) *pluginpb.SandboxInfo {
	return &pluginpb.SandboxInfo{Id: i.ID, RepoPath: i.RepoPath, HomePath: i.HomePath}
}

func fromSandboxInfo(i *pluginpb.SandboxInfo) SandboxInfo {
	return SandboxInfo{ID: i.GetId(), RepoPath: i.GetRepoPath(), HomePath: i.GetHomePath()}
}

func toDescription(d AgentDescription) *pluginpb.AgentDescription {
	out := &pluginpb.AgentDescription{Env: d.Env, Resume: d.Resume, Fork: d.Fork, BypassesPermissions: d.BypassesPermissions, CaptureSessions: d.CaptureSessions}
	for _, g := range d.RequiredEnv {
		out.RequiredEnv = append(out.RequiredEnv, &pluginpb.StringList{Values: g})
	}
	if s := d.Sessions; s != nil {
		out.Sessions = &pluginpb.SessionStorage{PathPattern: s.PathPattern, EncodeCwd: s.EncodeCwd}
	}
	return out
}

func fromDescription(d *pluginpb.AgentDescription) AgentDescription {
	out := AgentDescription{Env: d.GetEnv(), Resume: d.GetResume(), Fork: d.GetFork(), BypassesPermissions: d.GetBypassesPermissions(), CaptureSessions: d.GetCaptureSessions()}
	for _, g := range d.GetRequiredEnv() {
		out.RequiredEnv = append(out.RequiredEnv, g.Values)
	}
	if s := d.GetSessions(); s != nil {
		out.Sessions = &SessionStorage{PathPattern: s.PathPattern, EncodeCwd: s.EncodeCwd}
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

func fromEvent(e *pluginpb.Event) Event {
	out := Event{
		Type: EventType(e.Type), Text: string(e.Text), ToolName: string(e.ToolName),
		ToolArg: string(e.ToolArg), SessionID: string(e.SessionId),
	}
	if u := e.Usage; u != nil {
		out.Usage = &Usage{
			InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens,
		}
	}
	return out
}

func toBytesList(ss []string) [][]byte {
	if ss == nil {
		return nil
	}
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func fromBytesList(bs [][]byte) []string {
	if bs == nil {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func toBytesMap(m map[string]string) map[string][]byte {
	if m == nil {
		return nil
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func fromBytesMap(m map[string][]byte) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}
