package containerkit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/missingstudio/sanddune/internal/mounts"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Fixed sandbox layout (the same as the predecessor's images expect).
const (
	HomeDir      = "/home/agent"
	WorkspaceDir = "/home/agent/workspace"
)

// ContainerPath maps a configured (and validated) container path to an
// absolute one: ~ is the agent home, relative paths are under the workspace.
func ContainerPath(p string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return path.Join(HomeDir, p[1:])
	case path.IsAbs(p):
		return path.Clean(p)
	}
	return path.Join(WorkspaceDir, p)
}

// Bind is one bind mount of a sandbox.
type Bind struct {
	Source, Target string
	ReadOnly       bool
	// Git marks the repository's shared git metadata, which other runs
	// mount too (so it must never get a private SELinux label).
	Git bool
	// Asked marks a CreateRequest.Mounts directory (listed in Info).
	Asked bool
}

// Binds is the bind-mount set a CreateRequest asks for: the worktree at
// WorkspaceDir, the git metadata at its own paths, the configured mounts
// (whose SandboxPath went through ContainerPath), then the host's Mounts
// that overlap none of them (a left-out one is copied instead). Two binds
// on one target are an error.
func Binds(req sdk.CreateRequest, mounts []mounts.Mount) ([]Bind, error) {
	var bs []Bind
	add := func(b Bind) error {
		for _, o := range bs {
			if o.Target == b.Target {
				return fmt.Errorf("two mounts target %s (%s and %s)", b.Target, o.Source, b.Source)
			}
		}
		bs = append(bs, b)
		return nil
	}
	if req.WorktreePath != "" {
		if !path.IsAbs(req.WorktreePath) {
			return nil, fmt.Errorf("worktree path %q is not absolute", req.WorktreePath)
		}
		_ = add(Bind{Source: req.WorktreePath, Target: WorkspaceDir})
	}
	for _, g := range req.GitMounts {
		dst := g.SandboxPath
		if dst == "" {
			dst = g.HostPath
		}
		if !path.IsAbs(g.HostPath) || !path.IsAbs(dst) {
			return nil, fmt.Errorf("git mount %q: paths must be absolute", g.HostPath)
		}
		if err := add(Bind{Source: g.HostPath, Target: path.Clean(dst), ReadOnly: g.ReadOnly, Git: true}); err != nil {
			return nil, err
		}
	}
	for i, m := range mounts {
		src, err := m.Source(req.HostRepoPath)
		if err != nil {
			return nil, fmt.Errorf("mount.%d: %w", i, err)
		}
		if err := add(Bind{Source: src, Target: m.SandboxPath, ReadOnly: m.ReadOnly}); err != nil {
			return nil, fmt.Errorf("mount.%d: %w", i, err)
		}
	}
	for _, m := range req.Mounts {
		if !path.IsAbs(m.HostPath) || !(path.IsAbs(m.SandboxPath) || strings.HasPrefix(m.SandboxPath, "~/")) {
			return nil, fmt.Errorf("mount %q at %q: want an absolute host path and an absolute or ~/ sandbox path", m.HostPath, m.SandboxPath)
		}
		b := Bind{Source: path.Clean(m.HostPath), Target: ContainerPath(m.SandboxPath), ReadOnly: m.ReadOnly, Asked: true}
		overlaps := func(o Bind) bool {
			return sandboxkit.Within(o.Target, b.Target) || sandboxkit.Within(b.Target, o.Target)
		}
		if !slices.ContainsFunc(bs, overlaps) {
			bs = append(bs, b)
		}
	}
	return bs, nil
}

// OwnedDirs lists the directories, from HomeDir down, that must exist owned
// by the container user: the home itself (and the workspace when no
// worktree is mounted there) and the parents of bind targets under it.
// Bind targets and anything inside them are left out (they are host paths).
// Parents come before their children.
func OwnedDirs(binds []Bind, hasWorktree bool) []string {
	inBind := func(p string) bool {
		for _, b := range binds {
			if sandboxkit.Within(p, b.Target) {
				return true
			}
		}
		return false
	}
	set := map[string]bool{HomeDir: true}
	if !hasWorktree {
		set[WorkspaceDir] = true
	}
	for _, b := range binds {
		for d := path.Dir(b.Target); sandboxkit.Within(d, HomeDir); d = path.Dir(d) {
			set[d] = true
		}
	}
	var dirs []string
	for d := range set {
		if !inBind(d) {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// ResolvePath maps a sandbox path (relative to the workspace, or absolute)
// and confines it to the agent home (workspace included), /tmp and the
// bind targets.
func ResolvePath(p string, binds []Bind) (string, error) {
	if p == "" {
		return WorkspaceDir, nil
	}
	abs, err := sandboxkit.SandboxPath(p, WorkspaceDir)
	if err != nil {
		return "", err
	}
	if sandboxkit.Within(abs, HomeDir) || sandboxkit.Within(abs, "/tmp") {
		return abs, nil
	}
	for _, b := range binds {
		if sandboxkit.Within(abs, b.Target) {
			return abs, nil
		}
	}
	return "", fmt.Errorf("%w: %q is outside the sandbox (allowed: %s, /tmp and mounts)", sdk.ErrConfinement, p, HomeDir)
}

var tagUnsafe = regexp.MustCompile(`[^a-z0-9_.-]`)

// DefaultImage is sanddune:<last path segment of the repo>, made a valid tag.
func DefaultImage(repo string) string {
	tag := tagUnsafe.ReplaceAllString(strings.ToLower(filepath.Base(filepath.Clean(repo))), "-")
	tag = strings.TrimLeft(tag, ".-")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if repo == "" || tag == "" {
		tag = "local"
	}
	return "sanddune:" + tag
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// Name is a fresh container name for a run: sanddune-<run>-<8 hex>.
func Name(run string) string {
	n := strings.Trim(nameUnsafe.ReplaceAllString(run, "-"), "-._")
	if len(n) > 40 {
		n = n[:40]
	}
	if n == "" {
		n = "run"
	}
	return "sanddune-" + n + "-" + RandomHex(4)
}

// RandomHex is n random bytes, hex-encoded.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CommandImage is the repo a plugin command (build-image, remove-image)
// works in (the working directory outside one) and the image it acts on:
// the --image-name given, else DefaultImage of that repo.
func CommandImage(req sdk.RunCommandRequest, name string) (repo, image string) {
	repo = req.HostRepoPath
	if repo == "" {
		repo = req.Cwd
	}
	if name == "" {
		name = DefaultImage(repo)
	}
	return repo, name
}

// ParseCommandArgs parses a plugin command's arguments (usage is its usage
// line, e.g. "sanddune docker build-image [--image-name N]"). With -h or
// --help it writes the usage line and the flags on out and returns help
// true: the command is done. A bad flag or an argument is an sdk.Usagef
// error.
func ParseCommandArgs(fset *flag.FlagSet, usage string, args []string, out sdk.OutputFunc) (help bool, err error) {
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			lines := []string{"usage: " + usage, "", "Flags:"}
			fset.VisitAll(func(f *flag.Flag) {
				typ, help := flag.UnquoteUsage(f)
				lines = append(lines, fmt.Sprintf("  --%-22s %s", f.Name+" "+typ, help))
			})
			for _, line := range lines {
				out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(line)})
			}
			return true, nil
		}
		return false, sdk.Usagef("usage: %s: %v", usage, err)
	}
	if fset.NArg() > 0 {
		return false, sdk.Usagef("usage: %s: unexpected argument %q", usage, fset.Arg(0))
	}
	return false, nil
}
