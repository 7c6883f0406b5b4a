package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// conn is the host side of one plugin connection. done is cancelled when
// the plugin process exits.
type conn struct {
	// component names the dispensed component in errors ("" for the catalog).
	component string
	done      context.Context
	provider  pluginpb.ProviderClient
	sandbox   pluginpb.SandboxClient
	agent     pluginpb.AgentClient
}

// providerClient implements Provider for one component.
type providerClient struct {
	*conn
	ref *pluginpb.ComponentRef
}

func (c *providerClient) Info(ctx context.Context) (Info, error) {
	resp, err := c.provider.Info(ctx, c.ref, callOpts...)
	if err != nil {
		return Info{}, c.fromStatus(ctx, "Info", err)
	}
	return fromInfo(resp), nil
}

func (c *providerClient) ConfigSchema(ctx context.Context) (Schema, error) {
	resp, err := c.provider.ConfigSchema(ctx, c.ref, callOpts...)
	if err != nil {
		return Schema{}, c.fromStatus(ctx, "ConfigSchema", err)
	}
	s, err := fromSchema(resp)
	if err != nil {
		return Schema{}, &PluginError{Op: "ConfigSchema", Err: err}
	}
	return s, nil
}

func (c *providerClient) Configure(ctx context.Context, cfg Config) (Diagnostics, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return nil, &PluginError{Op: "Configure", Err: err}
	}
	resp, err := c.provider.Configure(ctx, &pluginpb.ConfigureRequest{Component: c.ref, Config: d}, callOpts...)
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

func (c *sandboxProviderClient) Describe(ctx context.Context, cfg Config) (SandboxDescription, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return SandboxDescription{}, &PluginError{Op: "Describe", Err: err}
	}
	resp, err := c.sandbox.Describe(ctx, &pluginpb.ConfigRequest{Component: c.ref.Name, Config: d}, callOpts...)
	if err = c.fromStatus(ctx, "Describe", err); errors.Is(err, ErrNotSupported) {
		return SandboxDescription{}, nil // a plugin of another language may lack it: no env layer
	} else if err != nil {
		return SandboxDescription{}, err
	}
	return SandboxDescription{Env: resp.GetEnv()}, nil
}

func (c *sandboxProviderClient) Preflight(ctx context.Context, req PreflightRequest) error {
	d, err := toConfig(req.Config)
	if err != nil {
		return &PluginError{Op: "Preflight", Err: err}
	}
	_, err = c.sandbox.Preflight(ctx, &pluginpb.PreflightRequest{
		Component: c.ref.Name, Config: d, HostRepoPath: req.HostRepoPath,
		HostUid: int64(req.HostUID), HostGid: int64(req.HostGID),
	}, callOpts...)
	return c.fromStatus(ctx, "Preflight", err)
}

func (c *sandboxProviderClient) Create(ctx context.Context, req CreateRequest) (Sandbox, error) {
	d, err := toConfig(req.Config)
	if err != nil {
		return nil, &PluginError{Op: "Create", Err: err}
	}
	resp, err := c.sandbox.Create(ctx, &pluginpb.CreateRequest{
		Component: c.ref.Name, Config: d, RunId: req.RunID, RunName: req.RunName,
		HostRepoPath: req.HostRepoPath, WorktreePath: req.WorktreePath, GitMounts: toMounts(req.GitMounts),
		Env: toBytesMap(req.Env), Labels: req.Labels, HostUid: int64(req.HostUID), HostGid: int64(req.HostGID),
	}, callOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Create", err)
	}
	return &sandboxClient{conn: c.conn, handle: resp.Handle, info: fromSandboxInfo(resp.Info)}, nil
}

func (c *sandboxProviderClient) Commands(ctx context.Context) ([]CommandSpec, error) {
	resp, err := c.sandbox.Commands(ctx, c.ref, callOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Commands", err)
	}
	var out []CommandSpec
	for _, s := range resp.Commands {
		out = append(out, CommandSpec{Name: s.Name, Usage: s.Usage, Short: s.Short})
	}
	return out, nil
}

func (c *sandboxProviderClient) RunCommand(ctx context.Context, req RunCommandRequest, out OutputFunc) (int, error) {
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.sandbox.RunCommand(ctx2, &pluginpb.RunCommandRequest{
		Component: c.ref.Name, Name: req.Name, Args: toBytesList(req.Args), Cwd: req.Cwd,
		HostRepoPath: req.HostRepoPath, HostUid: int64(req.HostUID), HostGid: int64(req.HostGID),
	}, callOpts...)
	if err != nil {
		return 0, c.fromStatus(ctx, "RunCommand", err)
	}
	res, err := c.recvOutput(ctx, "RunCommand", stream, out)
	return res.ExitCode, err
}

func (c *sandboxProviderClient) ListResources(ctx context.Context) ([]Resource, error) {
	resp, err := c.sandbox.ListResources(ctx, c.ref, callOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "ListResources", err)
	}
	var out []Resource
	for _, r := range resp.Resources {
		out = append(out, Resource{ID: r.Id, Labels: r.Labels})
	}
	return out, nil
}

func (c *sandboxProviderClient) RemoveResource(ctx context.Context, id string) error {
	_, err := c.sandbox.RemoveResource(ctx, &pluginpb.RemoveResourceRequest{Component: c.ref.Name, Id: id}, callOpts...)
	return c.fromStatus(ctx, "RemoveResource", err)
}

func (c *sandboxProviderClient) Recover(ctx context.Context, id string) (Sandbox, error) {
	resp, err := c.sandbox.Recover(ctx, &pluginpb.RecoverRequest{Component: c.ref.Name, Id: id}, callOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "Recover", err)
	}
	return &sandboxClient{conn: c.conn, handle: resp.Handle, info: fromSandboxInfo(resp.Info)}, nil
}

// sandboxClient is a live sandbox, addressed by its handle.
type sandboxClient struct {
	*conn
	handle string
	info   SandboxInfo
}

func (s *sandboxClient) Info() SandboxInfo { return s.info }

func (s *sandboxClient) Exec(ctx context.Context, req ExecRequest, out OutputFunc) (ExecResult, error) {
	// Cancelling the call's context cancels the plugin's Exec context.
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.sandbox.Exec(ctx2, toExecRequest(s.handle, req), callOpts...)
	if err != nil {
		return ExecResult{}, s.fromStatus(ctx, "Exec", err)
	}
	return s.recvOutput(ctx, "Exec", stream, out)
}

// recvOutput passes streamed output lines to out and returns the result.
func (c *conn) recvOutput(ctx context.Context, op string, stream interface {
	Recv() (*pluginpb.ExecResponse, error)
}, out OutputFunc) (ExecResult, error) {
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return ExecResult{}, &PluginError{Op: op, Err: errors.New("stream ended without a result")}
		}
		if err != nil {
			return ExecResult{}, c.fromStatus(ctx, op, err)
		}
		for _, l := range msg.Lines {
			out(OutputLine{Stream: Stream(l.Stream), Text: l.Text, Partial: l.Partial})
		}
		if r := msg.Result; r != nil {
			return ExecResult{ExitCode: int(r.ExitCode), TimedOut: r.TimedOut}, nil
		}
	}
}

func (s *sandboxClient) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	_, err := s.sandbox.CopyIn(ctx, &pluginpb.CopyRequest{Handle: s.handle, Src: hostPath, Dst: sandboxPath}, callOpts...)
	return s.fromStatus(ctx, "CopyIn", err)
}

func (s *sandboxClient) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	_, err := s.sandbox.CopyOut(ctx, &pluginpb.CopyRequest{Handle: s.handle, Src: sandboxPath, Dst: hostPath}, callOpts...)
	return s.fromStatus(ctx, "CopyOut", err)
}

func (s *sandboxClient) Close(ctx context.Context) error {
	_, err := s.sandbox.Close(ctx, &pluginpb.Handle{Handle: s.handle}, callOpts...)
	return s.fromStatus(ctx, "Close", err)
}

// agentProviderClient implements AgentProvider over gRPC.
type agentProviderClient struct {
	providerClient
}

func (c *agentProviderClient) configRequest(cfg Config) (*pluginpb.ConfigRequest, error) {
	d, err := toConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &pluginpb.ConfigRequest{Component: c.ref.Name, Config: d}, nil
}

func (c *agentProviderClient) Describe(ctx context.Context, cfg Config) (AgentDescription, error) {
	req, err := c.configRequest(cfg)
	if err != nil {
		return AgentDescription{}, &PluginError{Op: "Describe", Err: err}
	}
	resp, err := c.agent.Describe(ctx, req, callOpts...)
	if err != nil {
		return AgentDescription{}, c.fromStatus(ctx, "Describe", err)
	}
	return fromDescription(resp), nil
}

func (c *agentProviderClient) BuildCommand(ctx context.Context, req CommandRequest) (Command, error) {
	d, err := toConfig(req.Config)
	if err != nil {
		return Command{}, &PluginError{Op: "BuildCommand", Err: err}
	}
	resp, err := c.agent.BuildCommand(ctx, &pluginpb.BuildCommandRequest{
		Component: c.ref.Name, Config: d, Mode: string(req.Mode), Prompt: []byte(req.Prompt),
		Iteration: int64(req.Iteration), ResumeSessionId: req.ResumeSessionID, ForkSession: req.ForkSession,
		SkipPermissions: req.SkipPermissions, RunsAsRoot: req.RunsAsRoot,
	}, callOpts...)
	if err != nil {
		return Command{}, c.fromStatus(ctx, "BuildCommand", err)
	}
	return Command{
		Argv: fromBytesList(resp.Argv), Shell: string(resp.Shell), Stdin: resp.Stdin, Env: fromBytesMap(resp.Env),
	}, nil
}

func (c *agentProviderClient) RewriteSession(ctx context.Context, req RewriteSessionRequest) ([]byte, error) {
	d, err := toConfig(req.Config)
	if err != nil {
		return nil, &PluginError{Op: "RewriteSession", Err: err}
	}
	resp, err := c.agent.RewriteSession(ctx, &pluginpb.RewriteSessionRequest{
		Component: c.ref.Name, Config: d, Data: req.Data, FromCwd: req.FromCwd, ToCwd: req.ToCwd,
	}, callOpts...)
	if err != nil {
		return nil, c.fromStatus(ctx, "RewriteSession", err)
	}
	return resp.Data, nil
}

// ParseStream sends lines in batches while it receives events: both
// directions flow independently.
func (c *agentProviderClient) ParseStream(ctx context.Context, cfg Config, lines <-chan []byte, emit func(Event)) error {
	start, err := c.configRequest(cfg)
	if err != nil {
		return &PluginError{Op: "ParseStream", Err: err}
	}
	ctx2, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	stream, err := c.agent.ParseStream(ctx2, callOpts...)
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
// when the previous one went out, up to about maxBatchBytes; lines longer
// than MaxLineBytes go as pieces.
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
			piece, partial := line, len(line) > MaxLineBytes
			if partial {
				piece = line[:MaxLineBytes]
			}
			batch = append(batch, &pluginpb.OutputLine{Text: piece, Partial: partial})
			size += len(piece) + 8
			if size >= maxBatchBytes && !flush() {
				return false
			}
			if !partial {
				return true
			}
			line = line[MaxLineBytes:]
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
// has no terminal answers with an error wrapping ErrNotSupported.
func (s *sandboxClient) ExecTTY(ctx context.Context, req ExecRequest, tty TTY) (ExecResult, error) {
	if req.Stdin != nil {
		return ExecResult{}, &PluginError{Plugin: s.component, Op: "ExecTTY", Err: errors.New("stdin comes from the terminal: ExecRequest.Stdin must be nil")}
	}
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.sandbox.ExecTTY(ctx2, callOpts...)
	if err != nil {
		return ExecResult{}, s.fromStatus(ctx, "ExecTTY", err)
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
			return ExecResult{}, &PluginError{Plugin: s.component, Op: "ExecTTY", Err: errors.New("stream ended without a result")}
		}
		if err != nil {
			return ExecResult{}, s.fromStatus(ctx, "ExecTTY", err)
		}
		if len(msg.Output) > 0 {
			if _, err := tty.Output.Write(msg.Output); err != nil {
				return ExecResult{}, fmt.Errorf("ExecTTY: writing the terminal's output: %w", err)
			}
		}
		if r := msg.Result; r != nil {
			return ExecResult{ExitCode: int(r.ExitCode), TimedOut: r.TimedOut}, nil
		}
	}
}
