package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/missingstudio/sanddune/core/tempdir"
	"github.com/missingstudio/sanddune/sdk"
)

// Options configure a Host.
type Options struct {
	// Builtins are the plugin names compiled into the executable.
	Builtins []string
	// Executable is sanddune's own binary, re-executed to serve built-ins.
	Executable string
	// ServeArgs put Executable into plugin-serve mode; the built-in's name
	// is appended.
	ServeArgs []string
	// RepoRoot enables the <repo>/.sanddune/plugins search directory.
	RepoRoot string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Logger receives host logs and the plugins' own hclog output.
	Logger hclog.Logger
	// StartTimeout bounds a plugin's start-up handshake (default 30s).
	StartTimeout time.Duration
}

// Host launches plugin processes on demand, one per source, and shares them.
type Host struct {
	opts  Options
	dirs  []string
	mu    sync.Mutex
	procs map[string]*process
	// sockets is where the plugins make their Unix sockets: a directory of
	// this process (core/tempdir), removed by Close, or by gc after a kill.
	sockets string
}

type process struct {
	ready   chan struct{}
	killed  chan struct{} // closed once the plugin is killed
	src     Source
	cmd     *exec.Cmd
	stderr  io.WriteCloser
	client  *plugin.Client
	rpc     plugin.ClientProtocol
	catalog []sdk.Info
	err     error
}

// New returns a Host. Call Close when done.
func New(opts Options) *Host {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	return &Host{
		opts:  opts,
		dirs:  SearchDirs(opts.RepoRoot, opts.Getenv, opts.Executable),
		procs: map[string]*process{},
	}
}

// SearchDirs returns the directories this host searches for plugin binaries.
func (h *Host) SearchDirs() []string { return h.dirs }

// NotFoundError says no plugin provides a component.
type NotFoundError struct {
	Kind  sdk.Kind
	Label string
	Dirs  []string
	// Known are the plugin names that do exist (built-ins and binaries).
	Known []string
}

// KnownPlugins lets a caller suggest a name the user may have meant.
func (e *NotFoundError) KnownPlugins() []string { return e.Known }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s plugin named %q: it is not built in, and no %s%s was found in %s (set SANDDUNE_PLUGIN_PATH or drop the binary in .sanddune/plugins)",
		e.Kind, e.Label, BinaryPrefix, e.Label, strings.Join(e.Dirs, ", "))
}

// VersionError says a plugin speaks no protocol version this sanddune speaks.
type VersionError struct {
	Plugin       string
	Path         string
	PluginVer    string
	SupportedVer []int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("plugin %q (%s) speaks plugin protocol version %s, but this sanddune speaks %v: install a version of the plugin built against a matching sanddune sdk",
		e.Plugin, e.Path, e.PluginVer, e.SupportedVer)
}

// Component is a resolved provider.
type Component struct {
	Info     sdk.Info
	Source   Source
	Provider sdk.Provider // sdk.SandboxProvider or sdk.AgentProvider
}

// Sandbox resolves a sandbox provider by its HCL type label.
func (h *Host) Sandbox(ctx context.Context, label string) (sdk.SandboxProvider, Component, error) {
	c, err := h.Resolve(ctx, sdk.KindSandbox, label)
	if err != nil {
		return nil, c, err
	}
	return c.Provider.(sdk.SandboxProvider), c, nil
}

// Agent resolves an agent provider by its HCL type label.
func (h *Host) Agent(ctx context.Context, label string) (sdk.AgentProvider, Component, error) {
	c, err := h.Resolve(ctx, sdk.KindAgent, label)
	if err != nil {
		return nil, c, err
	}
	return c.Provider.(sdk.AgentProvider), c, nil
}

// Resolve finds the component of a kind with a type label, launching its
// plugin process if it is not running yet.
func (h *Host) Resolve(ctx context.Context, kind sdk.Kind, label string) (Component, error) {
	for _, name := range candidates(label) {
		src, ok := h.source(name)
		if !ok {
			continue
		}
		p := h.start(ctx, src)
		if p.err != nil {
			return Component{Source: src}, p.err
		}
		for _, info := range p.catalog {
			if info.Kind != kind || info.Name != label {
				continue
			}
			prov, err := dispense(p.rpc, kind, label)
			if err != nil {
				return Component{Source: src}, fmt.Errorf("plugin %q (%s): %w", name, src, err)
			}
			return Component{Info: info, Source: src, Provider: prov}, nil
		}
		if name == label {
			return Component{Source: src}, fmt.Errorf("plugin %q (%s) serves no %s named %q; it serves: %s",
				name, src, kind, label, describeCatalog(p.catalog))
		}
	}
	known := append([]string{}, h.opts.Builtins...)
	for _, b := range listBinaries(h.dirs) {
		known = append(known, b.Name)
	}
	return Component{}, &NotFoundError{Kind: kind, Label: label, Dirs: h.dirs, Known: known}
}

func dispense(rpc plugin.ClientProtocol, kind sdk.Kind, name string) (sdk.Provider, error) {
	if kind == sdk.KindSandbox {
		return sdk.DispenseSandbox(rpc, name)
	}
	return sdk.DispenseAgent(rpc, name)
}

func describeCatalog(infos []sdk.Info) string {
	var parts []string
	for _, i := range infos {
		parts = append(parts, fmt.Sprintf("%s %q", i.Kind, i.Name))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// source locates the plugin called name: an external binary first (which
// shadows a built-in), then a built-in.
func (h *Host) source(name string) (Source, bool) {
	builtin := h.isBuiltin(name)
	if p := findBinary(h.dirs, name); p != "" && p != h.opts.Executable {
		return Source{Name: name, Path: p, Shadows: builtin}, true
	}
	if builtin {
		return Source{Name: name}, true
	}
	return Source{}, false
}

func (h *Host) isBuiltin(name string) bool {
	for _, b := range h.opts.Builtins {
		if b == name {
			return true
		}
	}
	return false
}

// start launches the source's process once; concurrent callers wait for it.
func (h *Host) start(ctx context.Context, src Source) *process {
	key := "builtin:" + src.Name
	if !src.Builtin() {
		key = src.Path
	}
	h.mu.Lock()
	p, ok := h.procs[key]
	if !ok {
		p = &process{ready: make(chan struct{}), killed: make(chan struct{}), src: src}
		h.procs[key] = p
	}
	h.mu.Unlock()
	if !ok {
		go p.run(ctx, h)
	}
	<-p.ready
	return p
}

// run launches the plugin from a goroutine locked to its OS thread until
// the plugin is killed: the kernel sends the parent-death signal when the
// *thread* that started a child exits, and the Go runtime may retire
// threads.
func (p *process) run(ctx context.Context, h *Host) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p.launch(ctx, h)
	close(p.ready)
	if p.err == nil {
		<-p.killed
	}
}

var pluginVersionRE = regexp.MustCompile(`Plugin version: (\d+)`)

func (p *process) launch(ctx context.Context, h *Host) {
	src := p.src
	if !src.Builtin() && !isExecutable(src.Path) {
		p.err = fmt.Errorf("plugin %q: %s is not executable (chmod +x %s)", src.Name, src.Path, src.Path)
		return
	}
	var cmd *exec.Cmd
	if src.Builtin() {
		args := append(append([]string{}, h.opts.ServeArgs...), src.Name)
		cmd = exec.Command(h.opts.Executable, args...)
	} else {
		cmd = exec.Command(src.Path)
		if src.Shadows {
			h.opts.Logger.Info("external plugin overrides the built-in", "plugin", src.Name, "path", src.Path)
		}
	}
	// Own process group: a terminal Ctrl-C reaches sanddune, which cancels
	// runs while plugins are still alive to clean up; Pdeathsig kills the
	// plugin if sanddune itself dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = os.Environ()
	if dir, err := h.socketDir(); err == nil {
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+dir)
	}
	// A wrapper script's children may hold the output pipes after the
	// plugin is killed; don't wait for them forever.
	cmd.WaitDelay = 2 * time.Second
	p.cmd = cmd
	logName := "plugin." + src.Name
	p.stderr = stderrTo(h.opts.Logger.Named(logName))
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.ClientPluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           h.opts.Logger.Named(logName),
		StartTimeout:     h.opts.StartTimeout,
		SyncStderr:       p.stderr,
	})
	rpc, err := p.client.Client()
	if err != nil {
		killGroup(cmd)
		p.client.Kill()
		p.stderr.Close()
		if m := pluginVersionRE.FindStringSubmatch(err.Error()); m != nil {
			p.err = &VersionError{Plugin: src.Name, Path: src.String(), PluginVer: m[1], SupportedVer: supportedVersions()}
			return
		}
		p.err = fmt.Errorf("starting plugin %q (%s): %w", src.Name, src, err)
		return
	}
	p.rpc = rpc
	p.catalog, err = sdk.Catalog(ctx, rpc)
	if err != nil {
		p.err = fmt.Errorf("plugin %q (%s): listing its components: %w", src.Name, src, err)
	}
}

func supportedVersions() []int {
	var vs []int
	for v := range sdk.ClientPluginSets() {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	return vs
}

// Listing is one row of `sanddune plugins list`.
type Listing struct {
	Info   sdk.Info
	Source Source
	Err    error
}

// List launches every built-in and every plugin binary on the search path
// and returns what each serves. A plugin that fails to start is listed with
// its error.
func (h *Host) List(ctx context.Context) []Listing {
	var srcs []Source
	ext := map[string]bool{}
	for _, s := range listBinaries(h.dirs) {
		if s.Path == h.opts.Executable {
			continue
		}
		s.Shadows = h.isBuiltin(s.Name)
		ext[s.Name] = true
		srcs = append(srcs, s)
	}
	for _, b := range h.opts.Builtins {
		if !ext[b] {
			srcs = append(srcs, Source{Name: b})
		}
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].Name < srcs[j].Name })
	procs := make([]*process, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i] = h.start(ctx, s)
		}()
	}
	wg.Wait()
	var out []Listing
	for i, p := range procs {
		if p.err != nil {
			out = append(out, Listing{Source: srcs[i], Err: p.err})
			continue
		}
		for _, info := range p.catalog {
			out = append(out, Listing{Info: info, Source: srcs[i]})
		}
	}
	return out
}

// Close kills every plugin process this host started. It is idempotent.
func (h *Host) Close() {
	h.mu.Lock()
	procs := h.procs
	h.procs = map[string]*process{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-p.ready
			if p.client != nil {
				p.client.Kill()
				killGroup(p.cmd)
				p.stderr.Close()
			}
			close(p.killed)
		}()
	}
	wg.Wait()
	h.mu.Lock()
	if h.sockets != "" {
		os.RemoveAll(h.sockets)
		h.sockets = ""
	}
	h.mu.Unlock()
}

// socketDir returns the plugins' socket directory, made on first use.
func (h *Host) socketDir() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sockets == "" {
		dir, err := tempdir.Make("plugins")
		if err != nil {
			return "", err
		}
		h.sockets = dir
	}
	return h.sockets, nil
}

// IsShutdown reports whether err says a plugin process went away.
func IsShutdown(err error) bool { return errors.Is(err, sdk.ErrPluginShutdown) }

// killGroup kills what is left of a plugin's process group (the children of
// a wrapper script, say) once the plugin itself is gone or failed to start.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
