package sdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// server is the plugin side: it serves the components of a ServeOpts and
// keeps the live sandboxes by handle.
type server struct {
	pluginpb.UnimplementedProviderServer
	sandboxes map[string]SandboxProvider
	agents    map[string]AgentProvider

	mu      sync.Mutex
	next    uint64
	handles map[string]Sandbox
	// closing are closed when their handle's sandbox is: a WatchEgress
	// of it then ends.
	closing map[string]chan struct{}
	// creating counts Creates in progress: Serve waits for them, so a
	// sandbox that is being made as the host stops the plugin is closed.
	creating sync.WaitGroup
}

func newServer(opts ServeOpts) *server {
	return &server{sandboxes: opts.Sandboxes, agents: opts.Agents, handles: map[string]Sandbox{}, closing: map[string]chan struct{}{}}
}

func (s *server) provider(ref *pluginpb.ComponentRef) (Provider, error) {
	switch Kind(wire.KindName(ref.GetKind())) {
	case KindSandbox:
		return s.sandbox(ref.GetName())
	case KindAgent:
		return s.agent(ref.GetName())
	}
	return nil, status.Errorf(codes.InvalidArgument, "unknown component kind %v", ref.GetKind())
}

func (s *server) sandbox(name string) (SandboxProvider, error) {
	if p, ok := s.sandboxes[name]; ok {
		return p, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "no sandbox provider %q in this plugin", name)
}

func (s *server) agent(name string) (AgentProvider, error) {
	if p, ok := s.agents[name]; ok {
		return p, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "no agent provider %q in this plugin", name)
}

func (s *server) Catalog(ctx context.Context, _ *pluginpb.CatalogRequest) (*pluginpb.CatalogResponse, error) {
	out := &pluginpb.CatalogResponse{}
	add := func(name string, kind Kind, p Provider) error {
		info, err := p.Info(ctx)
		if err != nil {
			return toStatus(err)
		}
		info = served(info, name, kind)
		_, commands := p.(CommandProvider)
		_, resources := p.(ResourceLister)
		_, recovers := p.(SandboxRecoverer)
		_, sandbox := p.(SandboxProvider)
		out.Components = append(out.Components, &pluginpb.Component{
			Info: toInfo(info), Commands: commands, Resources: resources, Recover: recovers,
			CreateProgress: sandbox,
		})
		return nil
	}
	for _, name := range sortedKeys(s.sandboxes) {
		if err := add(name, KindSandbox, s.sandboxes[name]); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(s.agents) {
		if err := add(name, KindAgent, s.agents[name]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *server) Info(ctx context.Context, ref *pluginpb.ComponentRef) (*pluginpb.ComponentInfo, error) {
	p, err := s.provider(ref)
	if err != nil {
		return nil, err
	}
	info, err := p.Info(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return toInfo(served(info, ref.GetName(), Kind(wire.KindName(ref.GetKind())))), nil
}

// served completes a provider's Info with what Serve knows: the name and
// kind the component is served under and the protocol version spoken.
func served(info Info, name string, kind Kind) Info {
	info.Name, info.Kind, info.ProtocolVersions = name, kind, []int{wire.ProtocolVersion}
	return info
}

func (s *server) ConfigSchema(ctx context.Context, ref *pluginpb.ComponentRef) (*pluginpb.Schema, error) {
	p, err := s.provider(ref)
	if err != nil {
		return nil, err
	}
	schema, err := p.ConfigSchema(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out, err := toSchema(schema)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding schema: %v", err)
	}
	return out, nil
}

func (s *server) Configure(ctx context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.ConfigureResponse, error) {
	p, err := s.provider(req.Component)
	if err != nil {
		return nil, err
	}
	cfg, err := fromConfig(req.Config)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	diags, err := p.Configure(ctx, cfg)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.ConfigureResponse{Diagnostics: toDiagnostics(diags)}, nil
}

// sandboxServer serves the Sandbox service.
type sandboxServer struct {
	pluginpb.UnimplementedSandboxServer
	*server
}

func (s sandboxServer) Describe(ctx context.Context, req *pluginpb.ConfigRequest) (*pluginpb.SandboxDescription, error) {
	p, err := s.sandbox(req.GetComponent())
	if err != nil {
		return nil, err
	}
	cfg, err := fromConfig(req.GetConfig())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d, err := p.Describe(ctx, cfg)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.SandboxDescription{Env: d.Env, EgressConflicts: toDiagnostics(d.EgressConflicts)}, nil
}

func (s sandboxServer) Preflight(ctx context.Context, req *pluginpb.PreflightRequest) (*pluginpb.Empty, error) {
	p, err := s.sandbox(req.Component)
	if err != nil {
		return nil, err
	}
	cfg, err := fromConfig(req.Config)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	err = p.Preflight(ctx, PreflightRequest{
		Config: cfg, HostRepoPath: req.HostRepoPath, HostUID: int(req.HostUid), HostGID: int(req.HostGid),
	})
	return &pluginpb.Empty{}, toStatus(err)
}

func (s sandboxServer) Create(ctx context.Context, req *pluginpb.CreateRequest) (*pluginpb.CreateResponse, error) {
	return s.create(ctx, req, nil)
}

// CreateWithProgress is Create streaming the provider's progress reports
// (CreateRequest.Report) before the created sandbox.
func (s sandboxServer) CreateWithProgress(req *pluginpb.CreateRequest, stream pluginpb.Sandbox_CreateWithProgressServer) error {
	var mu sync.Mutex
	done := false
	resp, err := s.create(stream.Context(), req, func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if !done { // a report after Create returned has nowhere to go
			stream.Send(&pluginpb.CreateProgressResponse{Progress: &pluginpb.Progress{Waiting: p.Waiting, Message: []byte(p.Message)}})
		}
	})
	mu.Lock()
	done = true
	mu.Unlock()
	if err != nil {
		return err
	}
	return stream.Send(&pluginpb.CreateProgressResponse{Created: resp})
}

func (s sandboxServer) create(ctx context.Context, req *pluginpb.CreateRequest, progress func(Progress)) (*pluginpb.CreateResponse, error) {
	p, err := s.sandbox(req.Component)
	if err != nil {
		return nil, err
	}
	cfg, err := fromConfig(req.Config)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.creating.Add(1)
	defer s.creating.Done()
	sb, err := p.Create(ctx, CreateRequest{
		Config: cfg, RunID: req.RunId, RunName: req.RunName, HostRepoPath: req.HostRepoPath,
		WorktreePath: req.WorktreePath, GitMounts: fromMounts(req.GitMounts), Env: wire.StringMap(req.Env),
		Labels: req.Labels, HostUID: int(req.HostUid), HostGID: int(req.HostGid), Progress: progress,
		Egress: fromEgressPolicy(req.Egress), Mounts: fromMounts(req.Mounts),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	if ctx.Err() != nil { // the host gave up on it: nobody would close it
		_ = sb.Close(context.WithoutCancel(ctx))
		return nil, toStatus(ctx.Err())
	}
	return s.register(sb), nil
}

// register keeps sb under a new handle.
func (s sandboxServer) register(sb Sandbox) *pluginpb.CreateResponse {
	s.mu.Lock()
	s.next++
	h := strconv.FormatUint(s.next, 10)
	s.handles[h] = sb
	s.mu.Unlock()
	return &pluginpb.CreateResponse{Handle: h, Info: toSandboxInfo(sb.Info())}
}

var errClosed = status.Error(codes.FailedPrecondition, "sandbox is closed")

func (s sandboxServer) handle(h string) (Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb, ok := s.handles[h]; ok {
		return sb, nil
	}
	return nil, errClosed
}

func (s sandboxServer) Exec(req *pluginpb.ExecRequest, stream pluginpb.Sandbox_ExecServer) error {
	sb, err := s.handle(req.Handle)
	if err != nil {
		return err
	}
	return streamOutput(stream, func(out OutputFunc) (ExecResult, error) {
		return sb.Exec(stream.Context(), fromExecRequest(req), out)
	})
}

// streamOutput runs fn, streaming its output in batches and then its result.
func streamOutput(stream interface {
	Send(*pluginpb.ExecResponse) error
}, fn func(OutputFunc) (ExecResult, error)) error {
	q := newQueue[*pluginpb.OutputLine]()
	sent := make(chan error, 1)
	go func() {
		sent <- q.drain(func(lines []*pluginpb.OutputLine) error {
			return stream.Send(&pluginpb.ExecResponse{Lines: lines})
		})
	}()
	res, err := fn(func(l OutputLine) {
		pushLine(q, l.Stream, l.Text, l.Partial)
	})
	q.close()
	if serr := <-sent; serr != nil {
		return serr
	}
	if err != nil {
		return toStatus(err)
	}
	return stream.Send(&pluginpb.ExecResponse{Result: &pluginpb.ExecResult{
		ExitCode: int64(res.ExitCode), TimedOut: res.TimedOut,
	}})
}

// pushLine queues a copy of text, split into pieces of at most MaxLineBytes.
func pushLine(q *queue[*pluginpb.OutputLine], stream Stream, text []byte, partial bool) {
	for len(text) > MaxLineBytes {
		q.push(&pluginpb.OutputLine{Stream: int32(stream), Text: bytes.Clone(text[:MaxLineBytes]), Partial: true}, MaxLineBytes)
		text = text[MaxLineBytes:]
	}
	q.push(&pluginpb.OutputLine{Stream: int32(stream), Text: bytes.Clone(text), Partial: partial}, len(text)+8)
}

func (s sandboxServer) CopyIn(ctx context.Context, req *pluginpb.CopyRequest) (*pluginpb.Empty, error) {
	sb, err := s.handle(req.Handle)
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sb.CopyIn(ctx, req.Src, req.Dst))
}

func (s sandboxServer) CopyOut(ctx context.Context, req *pluginpb.CopyRequest) (*pluginpb.Empty, error) {
	sb, err := s.handle(req.Handle)
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sb.CopyOut(ctx, req.Src, req.Dst))
}

func (s sandboxServer) Close(ctx context.Context, req *pluginpb.Handle) (*pluginpb.Empty, error) {
	sb, err := s.handle(req.Handle)
	if err != nil {
		return &pluginpb.Empty{}, nil // already closed
	}
	if err := sb.Close(ctx); err != nil {
		return nil, toStatus(err)
	}
	s.mu.Lock()
	delete(s.handles, req.Handle)
	s.closed(req.Handle)
	s.mu.Unlock()
	return &pluginpb.Empty{}, nil
}

// closed ends the WatchEgress calls of handle h; s.mu is held.
func (s *server) closed(h string) {
	if ch, ok := s.closing[h]; ok {
		close(ch)
		delete(s.closing, h)
	}
}

// WatchEgress streams an EgressWatcher's refusals until the host cancels
// the call or closes the sandbox: then the stream ends once the watcher
// returned, with every refusal it reported.
func (s sandboxServer) WatchEgress(req *pluginpb.Handle, stream pluginpb.Sandbox_WatchEgressServer) error {
	s.mu.Lock()
	sb, open := s.handles[req.Handle]
	closing, ok := s.closing[req.Handle]
	if open && !ok {
		closing = make(chan struct{})
		s.closing[req.Handle] = closing
	}
	s.mu.Unlock()
	if !open {
		return errClosed
	}
	ew, ok := sb.(EgressWatcher)
	if !ok {
		return status.Error(codes.Unimplemented, "this sandbox reports no egress refusals (it does not implement sdk.EgressWatcher)")
	}
	var mu sync.Mutex
	var sendErr error
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := ew.WatchEgress(ctx, func(d EgressDenial) {
		mu.Lock()
		defer mu.Unlock()
		if sendErr == nil {
			if sendErr = stream.Send(toEgressDenial(d)); sendErr != nil {
				cancel()
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if sendErr != nil {
		return sendErr
	}
	return toStatus(err)
}

// closeAll closes the sandboxes the host left open (plugin shutdown),
// once the Creates in progress have ended (or ctx did).
func (s *server) closeAll(ctx context.Context) error {
	created := make(chan struct{})
	go func() {
		s.creating.Wait()
		close(created)
	}()
	select {
	case <-created:
	case <-ctx.Done():
	}
	s.mu.Lock()
	open := s.handles
	s.handles = map[string]Sandbox{}
	for h := range s.closing {
		s.closed(h)
	}
	s.mu.Unlock()
	var errs []error
	for _, sb := range open {
		errs = append(errs, sb.Close(ctx))
	}
	return errors.Join(errs...)
}

// optional returns the named sandbox provider as the optional interface
// T, or Unimplemented saying what the provider lacks.
func optional[T any](s sandboxServer, name, lacks string) (T, error) {
	var none T
	p, err := s.sandbox(name)
	if err != nil {
		return none, err
	}
	t, ok := p.(T)
	if !ok {
		return none, status.Errorf(codes.Unimplemented, "sandbox provider %q %s", name, lacks)
	}
	return t, nil
}

func (s sandboxServer) Commands(ctx context.Context, ref *pluginpb.ComponentRef) (*pluginpb.CommandsResponse, error) {
	cp, err := optional[CommandProvider](s, ref.GetName(), "has no commands")
	if err != nil {
		return nil, err
	}
	specs, err := cp.Commands(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &pluginpb.CommandsResponse{}
	for _, c := range specs {
		out.Commands = append(out.Commands, &pluginpb.CommandSpec{Name: c.Name, Usage: c.Usage, Short: c.Short})
	}
	return out, nil
}

func (s sandboxServer) RunCommand(req *pluginpb.RunCommandRequest, stream pluginpb.Sandbox_RunCommandServer) error {
	cp, err := optional[CommandProvider](s, req.Component, "has no commands")
	if err != nil {
		return err
	}
	return streamOutput(stream, func(out OutputFunc) (ExecResult, error) {
		code, err := cp.RunCommand(stream.Context(), RunCommandRequest{
			Name: req.Name, Args: wire.Strings(req.Args), Cwd: req.Cwd, HostRepoPath: req.HostRepoPath,
			HostUID: int(req.HostUid), HostGID: int(req.HostGid),
		}, out)
		return ExecResult{ExitCode: code}, err
	})
}

func (s sandboxServer) ListResources(ctx context.Context, req *pluginpb.ListResourcesRequest) (*pluginpb.ListResourcesResponse, error) {
	rl, err := optional[ResourceLister](s, req.GetComponent(), "does not list resources")
	if err != nil {
		return nil, err
	}
	cfg, err := resourceConfig(req.GetConfig())
	if err != nil {
		return nil, err
	}
	rs, err := rl.ListResources(ctx, cfg)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &pluginpb.ListResourcesResponse{}
	for _, r := range rs {
		out.Resources = append(out.Resources, &pluginpb.Resource{Id: r.ID, Labels: r.Labels})
	}
	return out, nil
}

func (s sandboxServer) RemoveResource(ctx context.Context, req *pluginpb.RemoveResourceRequest) (*pluginpb.Empty, error) {
	rl, err := optional[ResourceLister](s, req.Component, "does not list resources")
	if err != nil {
		return nil, err
	}
	cfg, err := resourceConfig(req.GetConfig())
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(rl.RemoveResource(ctx, cfg, req.Id))
}

// resourceConfig decodes the config of a resource call; a host built
// before these calls carried one sends none: the zero Config, the
// provider's defaults.
func resourceConfig(d *pluginpb.DynamicValue) (Config, error) {
	cfg, err := fromConfig(d)
	if err != nil {
		return Config{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return cfg, nil
}

func (s sandboxServer) Recover(ctx context.Context, req *pluginpb.RecoverRequest) (*pluginpb.CreateResponse, error) {
	rec, err := optional[SandboxRecoverer](s, req.Component, "cannot recover sandboxes")
	if err != nil {
		return nil, err
	}
	cfg, err := resourceConfig(req.GetConfig())
	if err != nil {
		return nil, err
	}
	sb, err := rec.Recover(ctx, cfg, req.Id)
	if err != nil {
		return nil, toStatus(err)
	}
	return s.register(sb), nil
}

// agentServer serves the Agent service.
type agentServer struct {
	pluginpb.UnimplementedAgentServer
	*server
}

func (s agentServer) agentConfig(req *pluginpb.ConfigRequest) (AgentProvider, Config, error) {
	p, err := s.agent(req.GetComponent())
	if err != nil {
		return nil, Config{}, err
	}
	cfg, err := fromConfig(req.GetConfig())
	if err != nil {
		return nil, Config{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return p, cfg, nil
}

func (s agentServer) Describe(ctx context.Context, req *pluginpb.ConfigRequest) (*pluginpb.AgentDescription, error) {
	p, cfg, err := s.agentConfig(req)
	if err != nil {
		return nil, err
	}
	d, err := p.Describe(ctx, cfg)
	if err != nil {
		return nil, toStatus(err)
	}
	return toDescription(d), nil
}

func (s agentServer) BuildCommand(ctx context.Context, req *pluginpb.BuildCommandRequest) (*pluginpb.Command, error) {
	p, cfg, err := s.agentConfig(&pluginpb.ConfigRequest{Component: req.Component, Config: req.Config})
	if err != nil {
		return nil, err
	}
	c, err := p.BuildCommand(ctx, CommandRequest{
		Config: cfg, Mode: Mode(req.Mode), Prompt: string(req.Prompt), Iteration: int(req.Iteration),
		ResumeSessionID: req.ResumeSessionId, ForkSession: req.ForkSession,
		SkipPermissions: req.SkipPermissions, RunsAsRoot: req.RunsAsRoot,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.Command{
		Argv: wire.Bytes(c.Argv), Shell: []byte(c.Shell), Stdin: c.Stdin, Env: wire.BytesMap(c.Env),
	}, nil
}

func (s agentServer) RewriteSession(ctx context.Context, req *pluginpb.RewriteSessionRequest) (*pluginpb.RewriteSessionResponse, error) {
	p, cfg, err := s.agentConfig(&pluginpb.ConfigRequest{Component: req.Component, Config: req.Config})
	if err != nil {
		return nil, err
	}
	data, err := p.RewriteSession(ctx, RewriteSessionRequest{
		Config: cfg, Data: req.Data, FromCwd: req.FromCwd, ToCwd: req.ToCwd,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.RewriteSessionResponse{Data: data}, nil
}

func (s agentServer) EncodeCwd(ctx context.Context, req *pluginpb.EncodeCwdRequest) (*pluginpb.EncodeCwdResponse, error) {
	p, err := s.agent(req.Component)
	if err != nil {
		return nil, err
	}
	e, ok := p.(CwdEncoder)
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "agent provider %q does not implement sdk.CwdEncoder", req.Component)
	}
	encoded, err := e.EncodeCwd(ctx, req.Cwd)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.EncodeCwdResponse{Encoded: encoded}, nil
}

func (s agentServer) ParseStream(stream pluginpb.Agent_ParseStreamServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.Start == nil {
		return status.Error(codes.InvalidArgument, "ParseStream: first message must carry the config")
	}
	p, cfg, err := s.agentConfig(first.Start)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()

	// Receive line pieces, reassemble lines and feed the parser.
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		var partial []byte
		send := func(line []byte) bool {
			select {
			case lines <- line:
				return true
			case <-ctx.Done():
				return false
			}
		}
		deliver := func(pieces []*pluginpb.OutputLine) bool {
			for _, l := range pieces {
				if l.Partial {
					partial = append(partial, l.Text...)
					continue
				}
				line := l.Text
				if partial != nil {
					line, partial = append(partial, l.Text...), nil
				}
				if line == nil {
					line = []byte{}
				}
				if !send(line) {
					return false
				}
			}
			return true
		}
		for msg := first; ; {
			if !deliver(msg.Lines) {
				return
			}
			var err error
			if msg, err = stream.Recv(); err != nil {
				if err == io.EOF && partial != nil {
					send(partial)
				}
				if err != io.EOF {
					cancel()
				}
				return
			}
		}
	}()

	q := newQueue[*pluginpb.Event]()
	sent := make(chan error, 1)
	go func() {
		sent <- q.drain(func(events []*pluginpb.Event) error {
			return stream.Send(&pluginpb.ParseStreamResponse{Events: events})
		})
	}()
	err = p.ParseStream(ctx, cfg, lines, func(e Event) {
		q.push(toEvent(e), len(e.Text)+len(e.ToolArg)+64)
	})
	q.close()
	if serr := <-sent; serr != nil {
		return serr
	}
	return toStatus(err)
}
