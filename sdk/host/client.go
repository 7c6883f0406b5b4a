package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// conn is the host side of one plugin connection. done is cancelled when
// the plugin process exits.
type conn struct {
	// component names the dispensed component in errors ("" for the catalog).
	component string
	done      context.Context
	asked     *asked
	provider  pluginpb.ProviderClient
	sandbox   pluginpb.SandboxClient
	agent     pluginpb.AgentClient
}

// providerClient implements Provider for one component.
type providerClient struct {
	*conn
	ref *pluginpb.ComponentRef
}

func (c *providerClient) Info(ctx context.Context) (sdk.Info, error) {
	resp, err := c.provider.Info(ctx, c.ref, wire.CallOpts...)
	if err != nil {
		return sdk.Info{}, c.fromStatus(ctx, "Info", err)
	}
	return fromInfo(resp), nil
}

func (c *providerClient) ConfigSchema(ctx context.Context) (sdk.Schema, error) {
	resp, err := c.provider.ConfigSchema(ctx, c.ref, wire.CallOpts...)
	if err != nil {
		return sdk.Schema{}, c.fromStatus(ctx, "ConfigSchema", err)
	}
	s, err := fromSchema(resp)
	if err != nil {
		return sdk.Schema{}, &callError{op: "ConfigSchema", err: err}
	}
	return s, nil
}

func (c *providerClient) Configure(ctx context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return nil, &callError{op: "Configure", err: err}
	}
	resp, err := c.provider.Configure(ctx, &pluginpb.ConfigureRequest{Component: c.ref, Config: d}, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Configure", err)
	}
	return fromDiagnostics(resp.Diagnostics), nil
}

// sandboxProviderClient implements SandboxProvider, CommandProvider,
// ResourceLister and SandboxRecoverer over gRPC.
type sandboxProviderClient struct {
	providerClient
}

func (c *sandboxProviderClient) Describe(ctx context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return sdk.SandboxDescription{}, &callError{op: "Describe", err: err}
	}
	resp, err := c.sandbox.Describe(ctx, &pluginpb.ConfigRequest{Component: c.ref.Name, Config: d}, wire.CallOpts...)
	if err = c.fromStatus(ctx, "Describe", err); errors.Is(err, sdk.ErrNotSupported) {
		return sdk.SandboxDescription{}, nil // a plugin of another language may lack it: no env layer
	} else if err != nil {
		return sdk.SandboxDescription{}, err
	}
	return sdk.SandboxDescription{Env: resp.GetEnv(), EgressConflicts: fromDiagnostics(resp.GetEgressConflicts())}, nil
}

func (c *sandboxProviderClient) Preflight(ctx context.Context, req sdk.PreflightRequest) error {
	d, err := toConfig(req.Config)
	if err != nil {
		return &callError{op: "Preflight", err: err}
	}
	preq := &pluginpb.PreflightRequest{
		Component: c.ref.Name, Config: d, HostRepoPath: req.HostRepoPath,
		HostUid: int64(req.HostUID), HostGid: int64(req.HostGID),
	}
	return c.asked.preflight(ctx, preq, func() error {
		_, err := c.sandbox.Preflight(ctx, preq, wire.CallOpts...)
		return c.fromStatus(ctx, "Preflight", err)
	})
}

// Create calls CreateWithProgress when the caller takes progress reports
// and the plugin serves it (a plugin built before it existed does not),
// else Create.
func (c *sandboxProviderClient) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	d, err := toConfig(req.Config)
	if err != nil {
		return nil, &callError{op: "Create", err: err}
	}
	preq := &pluginpb.CreateRequest{
		Component: c.ref.Name, Config: d, RunId: req.RunID, RunName: req.RunName,
		HostRepoPath: req.HostRepoPath, WorktreePath: req.WorktreePath, GitMounts: toMounts(req.GitMounts),
		Env: wire.BytesMap(req.Env), Labels: req.Labels, HostUid: int64(req.HostUID), HostGid: int64(req.HostGID),
		Egress: toEgressPolicy(req.Egress), Mounts: toMounts(req.Mounts),
	}
	var resp *pluginpb.CreateResponse
	if req.Progress != nil && c.createsWithProgress(ctx) {
		resp, err = c.createWithProgress(ctx, preq, req.Progress)
	} else {
		resp, err = c.sandbox.Create(ctx, preq, wire.CallOpts...)
		err = c.fromStatus(ctx, "Create", err)
	}
	if err != nil {
		return nil, err
	}
	return &sandboxClient{conn: c.conn, handle: resp.Handle, info: fromSandboxInfo(resp.Info)}, nil
}

// createsWithProgress reads the component's create_progress capability
// from the plugin's catalog.
func (c *sandboxProviderClient) createsWithProgress(ctx context.Context) bool {
	resp, err := c.catalog(ctx)
	if err != nil {
		return false // Create will say what is wrong with the plugin
	}
	for _, comp := range resp.Components {
		if info := comp.GetInfo(); info.GetKind() == pluginpb.Kind_KIND_SANDBOX && info.GetName() == c.ref.Name {
			return comp.CreateProgress
		}
	}
	return false
}

// createWithProgress passes the streamed progress reports to progress and
// returns the created sandbox.
func (c *sandboxProviderClient) createWithProgress(ctx context.Context, req *pluginpb.CreateRequest, progress func(sdk.Progress)) (*pluginpb.CreateResponse, error) {
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.sandbox.CreateWithProgress(ctx2, req, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Create", err)
	}
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil, &callError{plugin: c.component, op: "Create", err: errors.New("stream ended without a sandbox")}
		}
		if err != nil {
			return nil, c.fromStatus(ctx, "Create", err)
		}
		if p := msg.Progress; p != nil {
			progress(sdk.Progress{Waiting: p.Waiting, Message: string(p.Message)})
		}
		if msg.Created != nil {
			return msg.Created, nil
		}
	}
}

func (c *sandboxProviderClient) Commands(ctx context.Context) ([]sdk.CommandSpec, error) {
	resp, err := c.sandbox.Commands(ctx, c.ref, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Commands", err)
	}
	var out []sdk.CommandSpec
	for _, s := range resp.Commands {
		out = append(out, sdk.CommandSpec{Name: s.Name, Usage: s.Usage, Short: s.Short})
	}
	return out, nil
}

func (c *sandboxProviderClient) RunCommand(ctx context.Context, req sdk.RunCommandRequest, out sdk.OutputFunc) (int, error) {
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.sandbox.RunCommand(ctx2, &pluginpb.RunCommandRequest{
		Component: c.ref.Name, Name: req.Name, Args: wire.Bytes(req.Args), Cwd: req.Cwd,
		HostRepoPath: req.HostRepoPath, HostUid: int64(req.HostUID), HostGid: int64(req.HostGID),
	}, wire.CallOpts...)
	if err != nil {
		return 0, c.fromStatus(ctx, "RunCommand", err)
	}
	res, err := c.recvOutput(ctx, "RunCommand", stream, out)
	return res.ExitCode, err
}

func (c *sandboxProviderClient) ListResources(ctx context.Context, cfg sdk.Config) ([]sdk.Resource, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return nil, &callError{op: "ListResources", err: err}
	}
	resp, err := c.sandbox.ListResources(ctx, &pluginpb.ListResourcesRequest{Component: c.ref.Name, Config: d}, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "ListResources", err)
	}
	var out []sdk.Resource
	for _, r := range resp.Resources {
		out = append(out, sdk.Resource{ID: r.Id, Labels: r.Labels})
	}
	return out, nil
}

func (c *sandboxProviderClient) RemoveResource(ctx context.Context, cfg sdk.Config, id string) error {
	d, err := toConfig(cfg)
	if err != nil {
		return &callError{op: "RemoveResource", err: err}
	}
	_, err = c.sandbox.RemoveResource(ctx, &pluginpb.RemoveResourceRequest{Component: c.ref.Name, Id: id, Config: d}, wire.CallOpts...)
	return c.fromStatus(ctx, "RemoveResource", err)
}

func (c *sandboxProviderClient) Recover(ctx context.Context, cfg sdk.Config, id string) (sdk.Sandbox, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return nil, &callError{op: "Recover", err: err}
	}
	resp, err := c.sandbox.Recover(ctx, &pluginpb.RecoverRequest{Component: c.ref.Name, Id: id, Config: d}, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Recover", err)
	}
	return &sandboxClient{conn: c.conn, handle: resp.Handle, info: fromSandboxInfo(resp.Info)}, nil
}

// sandboxClient is a live sandbox, addressed by its handle.
type sandboxClient struct {
	*conn
	handle string
	info   sdk.SandboxInfo
}

func (s *sandboxClient) Info() sdk.SandboxInfo { return s.info }

func (s *sandboxClient) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	// Cancelling the call's context cancels the plugin's Exec context.
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.sandbox.Exec(ctx2, toExecRequest(s.handle, req), wire.CallOpts...)
	if err != nil {
		return sdk.ExecResult{}, s.fromStatus(ctx, "Exec", err)
	}
	return s.recvOutput(ctx, "Exec", stream, out)
}

// recvOutput passes streamed output lines to out and returns the result.
func (c *conn) recvOutput(ctx context.Context, op string, stream interface {
	Recv() (*pluginpb.ExecResponse, error)
}, out sdk.OutputFunc) (sdk.ExecResult, error) {
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return sdk.ExecResult{}, &callError{op: op, err: errors.New("stream ended without a result")}
		}
		if err != nil {
			return sdk.ExecResult{}, c.fromStatus(ctx, op, err)
		}
		for _, l := range msg.Lines {
			out(sdk.OutputLine{Stream: sdk.Stream(l.Stream), Text: l.Text, Partial: l.Partial})
		}
		if r := msg.Result; r != nil {
			return sdk.ExecResult{ExitCode: int(r.ExitCode), TimedOut: r.TimedOut}, nil
		}
	}
}

func (s *sandboxClient) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	_, err := s.sandbox.CopyIn(ctx, &pluginpb.CopyRequest{Handle: s.handle, Src: hostPath, Dst: sandboxPath}, wire.CallOpts...)
	return s.fromStatus(ctx, "CopyIn", err)
}

func (s *sandboxClient) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	_, err := s.sandbox.CopyOut(ctx, &pluginpb.CopyRequest{Handle: s.handle, Src: sandboxPath, Dst: hostPath}, wire.CallOpts...)
	return s.fromStatus(ctx, "CopyOut", err)
}

func (s *sandboxClient) Close(ctx context.Context) error {
	_, err := s.sandbox.Close(ctx, &pluginpb.Handle{Handle: s.handle}, wire.CallOpts...)
	return s.fromStatus(ctx, "Close", err)
}

// WatchEgress passes the sandbox's egress refusals to report until ctx
// ends. It implements EgressWatcher; a sandbox that lacks it fails with an
// error naming the plugin.
func (s *sandboxClient) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	stream, err := s.sandbox.WatchEgress(ctx, &pluginpb.Handle{Handle: s.handle}, wire.CallOpts...)
	if err != nil {
		return s.fromStatus(ctx, "WatchEgress", err)
	}
	for {
		d, err := stream.Recv()
		if ctx.Err() != nil {
			return nil
		}
		if err == io.EOF {
			return nil // the sandbox closed
		}
		if err != nil {
			return s.fromStatus(ctx, "WatchEgress", err)
		}
		report(fromEgressDenial(d))
	}
}

// agentProviderClient implements AgentProvider over gRPC.
type agentProviderClient struct {
	providerClient
	// legacyEncoding is the deprecated encode_cwd of the last Describe.
	legacyEncoding atomic.Pointer[string]
}

func (c *agentProviderClient) configRequest(cfg sdk.Config) (*pluginpb.ConfigRequest, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &pluginpb.ConfigRequest{Component: c.ref.Name, Config: d}, nil
}

func (c *agentProviderClient) Describe(ctx context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	req, err := c.configRequest(cfg)
	if err != nil {
		return sdk.AgentDescription{}, &callError{op: "Describe", err: err}
	}
	resp, err := c.agent.Describe(ctx, req, wire.CallOpts...)
	if err != nil {
		return sdk.AgentDescription{}, c.fromStatus(ctx, "Describe", err)
	}
	enc := resp.GetSessions().GetEncodeCwd()
	c.legacyEncoding.Store(&enc)
	return fromDescription(resp), nil
}

func (c *agentProviderClient) BuildCommand(ctx context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	d, err := toConfig(req.Config)
	if err != nil {
		return sdk.Command{}, &callError{op: "BuildCommand", err: err}
	}
	resp, err := c.agent.BuildCommand(ctx, &pluginpb.BuildCommandRequest{
		Component: c.ref.Name, Config: d, Mode: string(req.Mode), Prompt: []byte(req.Prompt),
		Iteration: int64(req.Iteration), ResumeSessionId: req.ResumeSessionID, ForkSession: req.ForkSession,
		SkipPermissions: req.SkipPermissions, RunsAsRoot: req.RunsAsRoot,
	}, wire.CallOpts...)
	if err != nil {
		return sdk.Command{}, c.fromStatus(ctx, "BuildCommand", err)
	}
	return sdk.Command{
		Argv: wire.Strings(resp.Argv), Shell: string(resp.Shell), Stdin: resp.Stdin, Env: wire.StringMap(resp.Env),
	}, nil
}

func (c *agentProviderClient) RewriteSession(ctx context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	d, err := toConfig(req.Config)
	if err != nil {
		return nil, &callError{op: "RewriteSession", err: err}
	}
	resp, err := c.agent.RewriteSession(ctx, &pluginpb.RewriteSessionRequest{
		Component: c.ref.Name, Config: d, Data: req.Data, FromCwd: req.FromCwd, ToCwd: req.ToCwd,
	}, wire.CallOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "RewriteSession", err)
	}
	return resp.Data, nil
}

// EncodeCwd implements sdk.CwdEncoder. A plugin built before the EncodeCwd
// RPC named its encoding in its description instead ("claude" or "pi");
// otherwise a plugin whose agent lacks it answers with an error wrapping
// sdk.ErrNotSupported.
func (c *agentProviderClient) EncodeCwd(ctx context.Context, cwd string) (string, error) {
	resp, err := c.agent.EncodeCwd(ctx, &pluginpb.EncodeCwdRequest{Component: c.ref.Name, Cwd: cwd}, wire.CallOpts...)
	if err == nil {
		return resp.Encoded, nil
	}
	err = c.fromStatus(ctx, "EncodeCwd", err)
	if legacy := c.legacyEncoding.Load(); legacy != nil && errors.Is(err, sdk.ErrNotSupported) {
		switch *legacy {
		case "claude":
			return agentkit.EncodeClaudeCwd(cwd), nil
		case "pi":
			return agentkit.EncodePiCwd(cwd), nil
		}
	}
	return "", err
}

// ParseStream sends lines in batches while it receives events: both
// directions flow independently.
func (c *agentProviderClient) ParseStream(ctx context.Context, cfg sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	start, err := c.configRequest(cfg)
	if err != nil {
		return &callError{op: "ParseStream", err: err}
	}
	ctx2, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	stream, err := c.agent.ParseStream(ctx2, wire.CallOpts...)
	if err != nil {
		return c.fromStatus(ctx, "ParseStream", err)
	}
	// A failed Send ends the stream; Recv below reports why.
	if err := stream.Send(&pluginpb.ParseStreamRequest{Start: start}); err == nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sendLines(ctx2, stream, lines)
		}()
	}
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return c.fromStatus(ctx, "ParseStream", err)
		}
		for _, e := range msg.Events {
			emit(fromEvent(e))
		}
	}
}

// sendLines sends lines in batches: each message carries the lines ready
// when the previous one went out, up to about wire.MaxBatchBytes; lines longer
// than sdk.MaxLineBytes go as pieces.
func sendLines(ctx context.Context, stream pluginpb.Agent_ParseStreamClient, lines <-chan []byte) {
	var batch []*pluginpb.OutputLine
	size := 0
	flush := func() bool {
		if len(batch) == 0 {
			return true
		}
		err := stream.Send(&pluginpb.ParseStreamRequest{Lines: batch})
		batch, size = nil, 0
		return err == nil
	}
	add := func(line []byte) bool {
		for {
			piece, partial := line, len(line) > sdk.MaxLineBytes
			if partial {
				piece = line[:sdk.MaxLineBytes]
			}
			batch = append(batch, &pluginpb.OutputLine{Text: piece, Partial: partial})
			size += len(piece) + 8
			if size >= wire.MaxBatchBytes && !flush() {
				return false
			}
			if !partial {
				return true
			}
			line = line[sdk.MaxLineBytes:]
		}
	}
	for {
		var line []byte
		var ok bool
		if len(batch) == 0 {
			select {
			case line, ok = <-lines:
			case <-ctx.Done():
				return
			}
		} else {
			select {
			case line, ok = <-lines:
			default:
				if !flush() {
					return
				}
				continue
			}
		}
		if !ok {
			if flush() {
				_ = stream.CloseSend()
			}
			return
		}
		if !add(line) {
			return
		}
	}
}

// ExecTTY sends the terminal's input and size changes while it receives
// the terminal's output. It implements TTYSandbox; a plugin whose sandbox
// has no terminal answers with an error wrapping sdk.ErrNotSupported.
func (s *sandboxClient) ExecTTY(ctx context.Context, req sdk.ExecRequest, tty sdk.TTY) (sdk.ExecResult, error) {
	if req.Stdin != nil {
		return sdk.ExecResult{}, &callError{plugin: s.component, op: "ExecTTY", err: errors.New("stdin comes from the terminal: ExecRequest.Stdin must be nil")}
	}
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.sandbox.ExecTTY(ctx2, wire.CallOpts...)
	if err != nil {
		return sdk.ExecResult{}, s.fromStatus(ctx, "ExecTTY", err)
	}
	// Send and CloseSend must not run concurrently.
	var mu sync.Mutex
	send := func(m *pluginpb.ExecTTYRequest) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(m)
	}
	start := &pluginpb.ExecTTYStart{Exec: toExecRequest(s.handle, req), Size: toWindowSize(tty.Size)}
	// A failed Send ends the stream; Recv below reports why.
	if send(&pluginpb.ExecTTYRequest{Start: start}) == nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := tty.Stdin.Read(buf)
				if n > 0 && send(&pluginpb.ExecTTYRequest{Stdin: bytes.Clone(buf[:n])}) != nil {
					return
				}
				if err == io.EOF {
					mu.Lock()
					_ = stream.CloseSend()
					mu.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			for {
				select {
				case size, ok := <-tty.Resize:
					if !ok || send(&pluginpb.ExecTTYRequest{Resize: toWindowSize(size)}) != nil {
						return
					}
				case <-ctx2.Done():
					return
				}
			}
		}()
	}
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return sdk.ExecResult{}, &callError{plugin: s.component, op: "ExecTTY", err: errors.New("stream ended without a result")}
		}
		if err != nil {
			return sdk.ExecResult{}, s.fromStatus(ctx, "ExecTTY", err)
		}
		if len(msg.Output) > 0 {
			if _, err := tty.Output.Write(msg.Output); err != nil {
				return sdk.ExecResult{}, fmt.Errorf("ExecTTY: writing the terminal's output: %w", err)
			}
		}
		if r := msg.Result; r != nil {
			return sdk.ExecResult{ExitCode: int(r.ExitCode), TimedOut: r.TimedOut}, nil
		}
	}
}
