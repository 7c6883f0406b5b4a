package pluginhost

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-version"

	"github.com/missingstudio/sanddune/core/internal/tempdir"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
	"github.com/missingstudio/sanddune/sdk/procgroup"
)

// Options configure a Host.
type Options struct {
	// Builtins are the plugins that come with sanddune, by name, each
	// mapped to the file name of the binary, installed beside Executable,
	// that serves it. The names a binary serves share one process of it.
	Builtins map[string]string
	// Executable is sanddune's own binary.
	Executable string
	// Self is the binary name, among Builtins', that is Executable
	// itself: the built-ins mapped to it are served by Executable, started
	// again as Self (argv[0]), so that both processes share one file's
	// pages (ADR 0030).
	Self string
	// RepoRoot enables the <repo>/.sanddune/plugins search directory.
	RepoRoot string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Logger receives host logs and the plugins' own hclog output.
	Logger hclog.Logger
	// StartTimeout bounds a plugin's start-up handshake (default 30s).
	StartTimeout time.Duration
	// Required are the config's required_plugins, by plugin name.
	Required map[string]Requirement
}

// Requirement is one entry of a config's required_plugins block.
type Requirement struct {
	// Source is the plugin binary the config asks for (an absolute path),
	// or "" for the usual search. Only a source replaces a built-in.
	Source string
	// Version constrains the plugin's version; nil allows any.
	Version version.Constraints
	// Decl is where the requirement is declared (file:line), for messages.
	Decl string
}

// Host launches plugin processes on demand, one per source, and shares them.
type Host struct {
	opts    Options
	dirs    []string
	repoDir string // <repo>/.sanddune/plugins: its binaries need trust
	trust   TrustStore
	// locks are the repo's lock file, then the user's; lockErr is why one
	// could not be read (no external plugin starts then).
	locks   []*Lock
	lockErr error
	mu      sync.Mutex
	procs   map[string]*process
	// stopped are the sandbox components of plugins Close had to kill
	// (Stopped).
	stopped []string
	warned  map[string]bool // binaries ignored because a built-in has the name
	// sockets is where the plugins make their Unix sockets: a directory of
	// this process (core/internal/tempdir), removed by Close, or by gc after a kill.
	sockets string
	secrets secrets
}

type process struct {
	ready   chan struct{}
	killed  chan struct{} // closed once the plugin is killed
	src     Source
	path    string // the binary
	argv0   string // a built-in's: its binary's path beside sanddune
	cmd     *exec.Cmd
	marker  string // NAME=random in the environment of the plugin and its children
	client  *plugin.Client
	stderrs []*stderrLog
	rpc     plugin.ClientProtocol
	catalog []sdk.Info
	err     error
	// forced: kill had to SIGKILL the plugin, which had not finished
	// shutting down (or it was killed before).
	forced bool
	// sandboxes are the sandbox components dispensed from it, by name.
	mu        sync.Mutex
	sandboxes map[string]bool
}

// dispensed records that a sandbox component was dispensed from p.
func (p *process) dispensed(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sandboxes == nil {
		p.sandboxes = map[string]bool{}
	}
	p.sandboxes[name] = true
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
	h := &Host{
		opts:   opts,
		dirs:   SearchDirs(opts.RepoRoot, opts.Getenv, opts.Executable),
		procs:  map[string]*process{},
		warned: map[string]bool{},
	}
	if opts.RepoRoot != "" {
		h.repoDir = filepath.Join(opts.RepoRoot, ".sanddune", "plugins")
		h.addLock(filepath.Join(opts.RepoRoot, RepoLockFile))
	}
	if data := dataHome(opts.Getenv); data != "" {
		h.trust = TrustStore{Path: filepath.Join(data, "sanddune", "trusted-plugins")}
		h.addLock(h.UserLockFile())
	}
	return h
}

func (h *Host) addLock(path string) {
	l, err := ReadLock(path)
	if err != nil {
		h.lockErr = errors.Join(h.lockErr, err)
		return
	}
	h.locks = append(h.locks, l)
}

// UserPluginDir is where `sanddune plugins install` puts binaries; "" when
// neither XDG_DATA_HOME nor HOME is set.
func (h *Host) UserPluginDir() string { return h.userPath("plugins") }

// UserLockFile pins the binaries `sanddune plugins install` installed.
func (h *Host) UserLockFile() string { return h.userPath("plugins.lock.hcl") }

func (h *Host) userPath(name string) string {
	if data := dataHome(h.opts.Getenv); data != "" {
		return filepath.Join(data, "sanddune", name)
	}
	return ""
}

// RepoLockFile is the repository's lock file; "" outside a repository.
func (h *Host) RepoLockFile() string {
	if h.opts.RepoRoot == "" {
		return ""
	}
	return filepath.Join(h.opts.RepoRoot, RepoLockFile)
}

// lockFor returns the lock entry pinning a plugin, the repo's first.
func (h *Host) lockFor(name string) (LockEntry, *Lock, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.locks {
		if e, ok := l.Entries[name]; ok {
			return e, l, true
		}
	}
	return LockEntry{}, nil, false
}

// trustedDir reports whether binaries in dir run without the user's
// trust: the directories the user chose (SANDDUNE_PLUGIN_PATH, the user
// plugin dir, sanddune's own), not the repository's.
func (h *Host) trustedDir(dir string) bool {
	dir = filepath.Clean(dir)
	for _, d := range h.dirs {
		if filepath.Clean(d) == dir {
			return dir != h.repoDir
		}
	}
	return false
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
// plugin process if it is not running yet, or again if it died.
func (h *Host) Resolve(ctx context.Context, kind sdk.Kind, label string) (Component, error) {
	for _, name := range candidates(label) {
		src, ok := h.source(name)
		if !ok {
			continue
		}
		if err := h.checkBuiltin(src); err != nil {
			return Component{Source: src}, err
		}
		p := h.start(ctx, src)
		if p.err != nil {
			return Component{Source: src}, p.err
		}
		for _, info := range p.catalog {
			if info.Kind != kind || info.Name != label {
				continue
			}
			if err := h.checkVersion(name, src, info); err != nil {
				return Component{Source: src}, err
			}
			prov, err := dispense(p.rpc, kind, label)
			if err != nil {
				return Component{Source: src}, fmt.Errorf("plugin %q (%s): %w", name, src, err)
			}
			if kind == sdk.KindSandbox {
				p.dispensed(label)
			}
			return Component{Info: info, Source: src, Provider: prov}, nil
		}
		if name == label {
			return Component{Source: src}, fmt.Errorf("plugin %q (%s) serves no %s named %q; it serves: %s",
				name, src, kind, label, describeCatalog(p.catalog))
		}
	}
	var known []string
	for b := range h.opts.Builtins {
		known = append(known, b)
	}
	sort.Strings(known)
	for _, b := range listBinaries(h.dirs) {
		if !h.isBuiltin(b.Name) && !h.isBuiltinBinary(b.Path) {
			known = append(known, b.Name)
		}
	}
	return Component{}, &NotFoundError{Kind: kind, Label: label, Dirs: h.dirs, Known: known}
}

// checkVersion holds a component to the version its required_plugins entry
// allows.
func (h *Host) checkVersion(name string, src Source, info sdk.Info) error {
	req, ok := h.opts.Required[name]
	if !ok || req.Version == nil {
		return nil
	}
	v, err := version.NewVersion(info.Version)
	if err != nil {
		return fmt.Errorf("plugin %q (%s) has version %q, which is not a version number, so it cannot satisfy required_plugins %q (%s)",
			name, src, info.Version, req.Version, req.Decl)
	}
	if !req.Version.Check(v) {
		return fmt.Errorf("plugin %q (%s) is version %s, but required_plugins asks for %q (%s): install a matching version",
			name, src, v, req.Version, req.Decl)
	}
	return nil
}

func dispense(rpc plugin.ClientProtocol, kind sdk.Kind, name string) (sdk.Provider, error) {
	if kind == sdk.KindSandbox {
		return host.DispenseSandbox(rpc, name)
	}
	return host.DispenseAgent(rpc, name)
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

// source locates the plugin called name: the binary required_plugins
// names, else a built-in, else a binary on the search path. A binary with
// a built-in's name is ignored (with a warning) unless the config asks for
// it by source.
func (h *Host) source(name string) (Source, bool) {
	builtin := h.isBuiltin(name)
	if req, ok := h.opts.Required[name]; ok && req.Source != "" {
		return Source{Name: name, Path: req.Source, Shadows: builtin, Trusted: h.trustedDir(filepath.Dir(req.Source))}, true
	}
	p := findBinary(h.dirs, name)
	if builtin {
		if p != "" && !h.besideSanddune(p) {
			h.warnIgnored(name, p)
		}
		return Source{Name: name}, true
	}
	if p != "" && !h.isBuiltinBinary(p) {
		return Source{Name: name, Path: p, Trusted: h.trustedDir(filepath.Dir(p))}, true
	}
	return Source{}, false
}

func (h *Host) warnIgnored(name, path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.warned[path] {
		return
	}
	h.warned[path] = true
	h.opts.Logger.Warn("plugin binary ignored: a built-in has its name; to use the binary instead, ask for it by source in the config: required_plugins { "+name+" = { source = \"PATH\" } }",
		"plugin", name, "path", path)
}

// builtinPath is the binary that serves the built-in plugin name: beside
// sanddune, or sanddune itself (Options.Self).
func (h *Host) builtinPath(name string) string {
	bin := h.opts.Builtins[name]
	if h.opts.Self != "" && bin == h.opts.Self {
		return h.opts.Executable
	}
	return h.beside(bin)
}

// beside is the path of a binary named bin beside sanddune.
func (h *Host) beside(bin string) string {
	return filepath.Join(filepath.Dir(h.opts.Executable), bin)
}

// besideSanddune reports whether a binary lies in sanddune's own directory.
// One named like a built-in is sanddune's own, or left there by an older
// install that had a binary per built-in: not a plugin the user added.
func (h *Host) besideSanddune(path string) bool {
	return h.opts.Executable != "" && filepath.Dir(path) == filepath.Dir(h.opts.Executable)
}

func (h *Host) isBuiltin(name string) bool {
	_, ok := h.opts.Builtins[name]
	return ok
}

// isBuiltinBinary reports whether path is, beside sanddune, named like the
// binary of built-ins (for Self, one left by an install from before
// sanddune served them itself): it serves built-ins under their names,
// never as a plugin of its own.
func (h *Host) isBuiltinBinary(path string) bool {
	for _, bin := range h.opts.Builtins {
		if path == h.beside(bin) {
			return true
		}
	}
	return false
}

// MissingBuiltinError is a built-in whose binary is not installed beside
// sanddune.
type MissingBuiltinError struct {
	Name string // the built-in, e.g. "docker"
	Path string // where sanddune looked for the binary serving it
}

func (e *MissingBuiltinError) Error() string {
	return fmt.Sprintf("built-in plugin %q is missing: sanddune starts it from %s, beside itself; %s", e.Name, e.Path, InstallHint(e.Path))
}

// InstallHint says how to install the binary of built-ins at path.
func InstallHint(path string) string {
	return "install it beside sanddune: make install in a checkout of sanddune, or GOBIN=" + filepath.Dir(path) +
		" go install github.com/missingstudio/sanddune/cmd/" + filepath.Base(path) + "@VERSION (sanddune's version)"
}

// checkBuiltin says, before anything starts, that the binary serving a
// built-in is missing or not executable.
func (h *Host) checkBuiltin(src Source) error {
	if !src.Builtin() {
		return nil
	}
	path := h.builtinPath(src.Name)
	if !isFile(path) {
		return &MissingBuiltinError{Name: src.Name, Path: path}
	}
	if !isExecutable(path) {
		return fmt.Errorf("built-in plugin %q: %s is not executable (chmod +x %s)", src.Name, path, path)
	}
	return nil
}

// start launches the source's process once; concurrent callers wait for
// it. The built-ins one binary serves share its process, which is named
// after the binary (sanddune-plugin-builtins runs as plugin "builtins").
func (h *Host) start(ctx context.Context, src Source) *process {
	key, path, argv0 := src.Path, src.Path, ""
	if src.Builtin() {
		bin := h.opts.Builtins[src.Name]
		key, path, argv0 = "builtin:"+bin, h.builtinPath(src.Name), h.beside(bin)
		src = Source{Name: strings.TrimPrefix(bin, BinaryPrefix)}
	}
	h.mu.Lock()
	p, ok := h.procs[key]
	var dead *process
	if ok && p.exited() {
		dead, ok = p, false
	}
	if !ok {
		p = &process{ready: make(chan struct{}), killed: make(chan struct{}), src: src, path: path, argv0: argv0}
		h.procs[key] = p
	}
	h.mu.Unlock()
	if dead != nil {
		h.opts.Logger.Warn("plugin process died; starting it again", "plugin", src.Name)
		dead.kill()
	}
	if !ok {
		go p.run(ctx, h)
	}
	<-p.ready
	return p
}

// exited reports whether a started plugin's process is gone (or no longer
// answers): the next Resolve relaunches it, so that a run whose sandbox
// plugin died can clean up through it (ADR 0016).
func (p *process) exited() bool {
	select {
	case <-p.ready:
	default:
		return false // starting
	}
	if p.client == nil {
		return false // failed to start: the error stays
	}
	return p.client.Exited() || p.rpc.Ping() != nil
}

// kill stops the plugin and what is left of its processes, once started.
func (p *process) kill() {
	<-p.ready
	if p.client != nil {
		p.client.Kill() // returns once the process was waited for
		if st := p.cmd.ProcessState; st != nil {
			ws, ok := st.Sys().(syscall.WaitStatus)
			p.forced = ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
		}
		p.killLeftovers()
		p.closeStderr()
	}
	close(p.killed)
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
	var secure *plugin.SecureConfig
	var lockEntry LockEntry
	var lock *Lock
	var cmd *exec.Cmd
	if src.Builtin() {
		// Built-ins are part of sanddune: trusted with it, never locked
		// (checkBuiltin has checked the binary). argv[0] is their binary's
		// path beside sanddune, even when that binary is sanddune (Self):
		// how sanddune, started again, knows to serve them, and what ps shows.
		cmd = exec.Command(p.path)
		cmd.Args[0] = p.argv0
	} else {
		if !isExecutable(src.Path) {
			p.err = fmt.Errorf("plugin %q: %s is not executable (chmod +x %s)", src.Name, src.Path, src.Path)
			return
		}
		if p.err = h.lockErr; p.err != nil {
			return
		}
		var err error
		secure, lockEntry, lock, err = h.verify(src)
		if err != nil {
			p.err = err
			return
		}
		cmd = exec.Command(src.Path)
		if src.Shadows {
			h.opts.Logger.Info("plugin binary replaces the built-in, as required_plugins asks", "plugin", src.Name, "path", src.Path)
		}
	}
	// Own process group: a terminal Ctrl-C reaches sanddune, which cancels
	// runs while plugins are still alive to clean up; Pdeathsig kills the
	// plugin if sanddune itself dies.
	cmd.SysProcAttr = procgroup.Attr()
	p.marker = markerEnv + "=" + randomHex()
	cmd.Env = append(os.Environ(), p.marker)
	if dir, err := h.socketDir(); err == nil && len(dir)+len("/plugin")+10 < maxSocketPath {
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+dir)
	} // else go-plugin's default, $TMPDIR/plugin<n>: gc cannot tell those from other programs'

	// A wrapper script's children may hold the output pipes after the
	// plugin is killed; don't wait for them forever.
	cmd.WaitDelay = 2 * time.Second
	p.cmd = cmd
	logger := redactingLogger{h.opts.Logger.Named("plugin." + src.Name), &h.secrets}
	raw, synced := newStderrLog(logger), newStderrLog(logger)
	p.stderrs = []*stderrLog{raw, synced}
	cfg := host.ClientConfig(cmd, logger)
	cfg.SecureConfig, cfg.StartTimeout, cfg.Stderr, cfg.SyncStderr = secure, h.opts.StartTimeout, raw, synced
	p.client = plugin.NewClient(cfg)
	rpc, err := p.client.Client()
	if err != nil {
		// Once the client has seen the process exit, or Kill has
		// returned, go-plugin has passed on all of its stderr.
		// Children holding the output pipes would keep Kill waiting.
		p.killLeftovers()
		if !p.client.Exited() {
			p.client.Kill()
		}
		p.client = nil
		tail := p.closeStderr()
		for i := range tail {
			tail[i] = h.secrets.string(tail[i])
		}
		switch m := pluginVersionRE.FindStringSubmatch(err.Error()); {
		case errors.Is(err, plugin.ErrChecksumsDoNotMatch) && lock.Path == "":
			p.err = fmt.Errorf("plugin %q not started: %s changed while it was being started (run it again)", src.Name, src.Path)
		case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
			actual, _ := FileSHA256(src.Path)
			p.err = &ChecksumError{Plugin: src.Name, Path: src.Path, LockFile: lock.Path, Locked: lockEntry.SHA256, Actual: actual, Relock: h.relockCommand(lock, src)}
		case m != nil:
			p.err = &VersionError{Plugin: src.Name, Path: src.String(), PluginVer: m[1], SupportedVer: host.Versions()}
		default:
			p.err = &StartError{Plugin: src.Name, Source: src.String(), Err: err, Stderr: tail}
		}
		return
	}
	p.rpc = rpc
	if p.catalog, err = host.CatalogComponents(ctx, rpc); err != nil {
		p.err = fmt.Errorf("plugin %q (%s): listing its components: %w", src.Name, src, err)
		return
	}
	if !src.Builtin() && !src.Trusted && lock.Path == "" {
		p.err = h.lockFirstUse(src, hex.EncodeToString(secure.Checksum), p.catalog)
	}
}

// lockFirstUse pins a binary the user trusted but no lock file names in
// the repository's lock file, the first time it starts, so
// that teammates who pull the lock file run the same bytes.
func (h *Host) lockFirstUse(src Source, sum string, catalog []sdk.Info) error {
	path := h.RepoLockFile()
	if path == "" {
		return nil
	}
	e := LockEntry{Name: src.Name, Source: h.displayPath(src.Path), Version: catalogVersion(catalog), SHA256: sum}
	added, err := AddLockEntry(path, e)
	if err != nil {
		return fmt.Errorf("plugin %q: pinning it in %s on first use: %w", src.Name, path, err)
	}
	if !added {
		return nil // another sanddune pinned it meanwhile
	}
	h.mu.Lock()
	for _, l := range h.locks {
		if l.Path == path {
			l.Entries[e.Name] = e
		}
	}
	h.mu.Unlock()
	h.opts.Logger.Warn("plugin pinned in the repository's lock file on its first trusted use: commit the lock file",
		"plugin", src.Name, "lock_file", path, "sha256", sum)
	return nil
}

// catalogVersion is the version of a binary's components, "" when they
// differ (none is the binary's).
func catalogVersion(catalog []sdk.Info) string {
	v := ""
	for i, info := range catalog {
		if i > 0 && info.Version != v {
			return ""
		}
		v = info.Version
	}
	return v
}

// verify checks an external binary before it starts: one the user has not
// trusted is refused (as tampered with when a lock pins another checksum);
// the returned SecureConfig makes go-plugin check,
// right before starting it, that the binary still hashes to what the lock
// pins (or, unlocked, to what was just checked).
func (h *Host) verify(src Source) (*plugin.SecureConfig, LockEntry, *Lock, error) {
	sum, err := FileSHA256(src.Path)
	if err != nil {
		return nil, LockEntry{}, nil, fmt.Errorf("plugin %q: %w", src.Name, err)
	}
	entry, lock, locked := h.lockFor(src.Name)
	if !src.Trusted {
		ok, err := h.trust.Trusted(sum)
		if err != nil {
			return nil, LockEntry{}, nil, err
		}
		switch {
		case !ok && locked && entry.SHA256 != sum:
			return nil, LockEntry{}, nil, &ChecksumError{Plugin: src.Name, Path: src.Path, LockFile: lock.Path, Locked: entry.SHA256, Actual: sum, Relock: h.relockCommand(lock, src)}
		case !ok:
			return nil, LockEntry{}, nil, &UntrustedError{Plugin: src.Name, Path: src.Path, SHA256: sum}
		}
	}
	want := sum
	if locked {
		want = entry.SHA256
	} else {
		// Unlocked: the binary must still be the one just hashed (and,
		// for a repository's binary, trusted).
		lock = &Lock{}
	}
	b, err := hex.DecodeString(want)
	if err != nil {
		return nil, LockEntry{}, nil, err
	}
	return &plugin.SecureConfig{Checksum: b, Hash: sha256.New()}, entry, lock, nil
}

// relockCommand is the command that pins a binary anew in lock.
func (h *Host) relockCommand(lock *Lock, src Source) string {
	if lock.Path == h.UserLockFile() {
		return "sanddune plugins install PATH-OF-THE-BINARY-YOU-TRUST"
	}
	return "sanddune plugins lock"
}

// closeStderr ends stderr logging and returns the last lines the plugin
// wrote there.
func (p *process) closeStderr() []string {
	var tail []string
	for _, s := range p.stderrs {
		s.Close()
		tail = append(tail, s.Tail()...)
	}
	return tail
}

// StartError says a plugin failed to start, with the last lines it wrote
// on stderr.
type StartError struct {
	Plugin string
	Source string
	Err    error
	Stderr []string
}

func (e *StartError) Error() string {
	msg := e.Err.Error()
	if line, ok := strings.CutPrefix(msg, "Unrecognized remote plugin message: "); ok {
		line, _, _ = strings.Cut(line, "\n")
		if strings.TrimSpace(line) == "" {
			msg = "it exited (or closed stdout) before the handshake"
		} else {
			msg = fmt.Sprintf("it wrote %q on stdout instead of the handshake line (stdout belongs to the handshake: log to stderr)", line)
		}
	}
	s := fmt.Sprintf("starting plugin %q (%s): %s", e.Plugin, e.Source, msg)
	if len(e.Stderr) > 0 {
		s += "; its last lines on stderr:\n    " + strings.Join(e.Stderr, "\n    ")
	}
	return s
}

func (e *StartError) Unwrap() error { return e.Err }

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
			p.kill()
		}()
	}
	wg.Wait()
	h.mu.Lock()
	for _, p := range procs {
		p.mu.Lock()
		for name := range p.sandboxes {
			if p.forced {
				h.stopped = append(h.stopped, name)
			}
		}
		p.mu.Unlock()
	}
	sort.Strings(h.stopped)
	if h.sockets != "" {
		os.RemoveAll(h.sockets)
		h.sockets = ""
	}
	h.mu.Unlock()
}

// Stopped returns, and forgets, the sandbox components dispensed from the
// plugins Close had to kill (SIGKILL after go-plugin's 2 s of shutdown grace)
// before they had shut down: a Create or Close they were still running
// may have left a resource. Resolving one again relaunches its plugin,
// through which the caller can collect them (ADR 0016).
func (h *Host) Stopped() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stopped
	h.stopped = nil
	return s
}

// maxSocketPath is the longest Unix socket path Linux takes (sun_path,
// with its NUL).
const maxSocketPath = 108

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

// markerEnv marks the environment of a plugin process, and so of every
// process it starts, with a value of its own.
const markerEnv = "SANDDUNE_PLUGIN_PROCESS"

// killLeftovers kills what is left of a plugin's processes (the children
// of a wrapper script, say) once the plugin itself is gone or failed to
// start: whatever carries its marker, or descends from what does. Its
// process group is not signalled: the plugin may have been reaped long
// ago (one that died mid-run) and its group id since taken by someone
// else's processes.
func (p *process) killLeftovers() { _ = procgroup.KillOwnMarked(p.marker) }

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
