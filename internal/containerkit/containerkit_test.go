package containerkit

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

func TestDefaultImage(t *testing.T) {
	t.Parallel()
	for repo, want := range map[string]string{
		"/src/My Repo":  "sanddune:my-repo",
		"/src/app/":     "sanddune:app",
		"/src/.hidden":  "sanddune:hidden",
		"":              "sanddune:local",
		"/src/a_b.c-d9": "sanddune:a_b.c-d9",
	} {
		if got := DefaultImage(repo); got != want {
			t.Errorf("DefaultImage(%q) = %q, want %q", repo, got, want)
		}
	}
}

func TestBindsAndOwnedDirs(t *testing.T) {
	t.Parallel()
	req := sdk.CreateRequest{WorktreePath: "/repo/.sanddune/worktrees/x",
		GitMounts: []sdk.Mount{{HostPath: "/repo/.git/objects"}, {HostPath: "/repo/.git/HEAD", ReadOnly: true}}}
	bs, err := Binds(req, nil)
	if err != nil || len(bs) != 3 || bs[0].Target != WorkspaceDir || bs[0].Git || !bs[2].Git || !bs[2].ReadOnly {
		t.Fatalf("binds %+v %v", bs, err)
	}
	if got := OwnedDirs(append(bs, Bind{Source: "/x", Target: "/home/agent/.cache/npm"}), true); !slices.Equal(got, []string{HomeDir, "/home/agent/.cache"}) {
		t.Fatalf("owned dirs %q", got)
	}
	if _, err := Binds(sdk.CreateRequest{WorktreePath: "/a", GitMounts: []sdk.Mount{{HostPath: "/b", SandboxPath: WorkspaceDir}}}, nil); err == nil {
		t.Fatal("two binds on one target accepted")
	}
	if (Bind{Git: true}).Relabel(LabelPrivate) != LabelShared || (Bind{}).Relabel(LabelPrivate) != LabelPrivate {
		t.Fatal("a private label on the shared git metadata")
	}
	for p, ok := range map[string]bool{"": true, "sub": true, "/tmp/x": true, "/home/agent/.x": true, "../x": false, "/etc": false} {
		if _, err := ResolvePath(p, bs); (err == nil) != ok {
			t.Errorf("ResolvePath(%q): %v", p, err)
		}
	}
}

// A copy extracts into the deepest existing directory and creates the
// rest; a file in the way, the root and a missing host path are refused.
func TestCopyInTarget(t *testing.T) {
	t.Parallel()
	tree := map[string]bool{"/": true, "/home": true, "/home/agent": true, "/home/agent/f": false} // path: is a directory
	stat := func(_ context.Context, p string) (bool, bool, error) { d, ok := tree[p]; return ok, d, nil }
	host := t.TempDir()
	ctx := context.Background()
	parent, missing, err := CopyInTarget(ctx, host, "/home/agent/a/b/c", stat)
	if err != nil || parent != "/home/agent" || !slices.Equal(missing, []string{"a", "b"}) {
		t.Fatalf("got %q %q %v", parent, missing, err)
	}
	if _, _, err := CopyInTarget(ctx, host, "/home/agent/f/x", stat); err == nil {
		t.Error("a file as a parent accepted")
	}
	if _, _, err := CopyInTarget(ctx, host, "/", stat); err == nil {
		t.Error("the root accepted")
	}
	if _, _, err := CopyInTarget(ctx, host+"/missing", "/home/agent/x", stat); err == nil {
		t.Error("a missing host path accepted")
	}
	failing := func(context.Context, string) (bool, bool, error) { return false, false, errors.New("engine down") }
	if _, _, err := CopyInTarget(ctx, host, "/home/agent/x", failing); err == nil || !strings.Contains(err.Error(), "engine down") {
		t.Errorf("stat failure: %v", err)
	}
}

// Every engine's block has the shared attributes, described with its own
// name, then its own attributes; Decode fills and checks them.
func TestEngineSchemaAndDecode(t *testing.T) {
	t.Parallel()
	e := Engine{Name: "acme", Title: "Acme"}
	s := e.Schema(sdk.Attribute{Name: "own", Type: cty.String})
	var names []string
	for _, a := range s.Attributes {
		names = append(names, a.Name)
	}
	if strings.Join(names, " ") != "image env network cpus memory pids_limit devices selinux_label own" || len(s.Blocks) != 1 || s.Blocks[0].TypeName != "mount" {
		t.Fatalf("schema %q %+v", names, s.Blocks)
	}
	if d := s.Attributes[3].Description; !strings.Contains(d, "(acme --cpus)") {
		t.Errorf("cpus: %q", d)
	}
	var d sandboxkit.Decoder
	c := Decode(&d, cty.ObjectVal(map[string]cty.Value{
		"image": cty.StringVal("a b"), "network": cty.StringVal("none"), "memory": cty.StringVal("1g"),
		"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("/x"), "sandbox_path": cty.StringVal("~/.x"), "readonly": cty.True,
		})}),
	}))
	if len(d.Diags) != 1 || d.Diags[0].Attribute != "image" || d.Diags[0].Summary != "invalid image name" {
		t.Fatalf("diags %#v", d.Diags)
	}
	if c.Memory != 1<<30 || c.Networks[0] != "none" || c.Mounts[0].SandboxPath != "/home/agent/.x" || c.ImageFor("/r") != "a b" || (Config{}).ImageFor("/src/r") != "sanddune:r" {
		t.Fatalf("decoded %+v", c)
	}
	if fix := e.BuildImageFix(Config{}, "sanddune:r"); fix != "sanddune acme build-image" {
		t.Errorf("fix %q", fix)
	}
	if fix := e.BuildImageFix(c, "a b"); fix != "sanddune acme build-image --image-name a b" {
		t.Errorf("fix %q", fix)
	}
}

// archiver is an engine whose container holds nothing; its transfers
// fail with getErr at Close.
type archiver struct{ getErr error }

func (archiver) Stat(context.Context, string) (bool, bool, error) { return true, true, nil }
func (archiver) PutArchive(_ context.Context, _ string, r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
func (archiver) Headers(context.Context, []string) ([]*tar.Header, error) { return nil, nil }
func (a archiver) GetArchive(context.Context, string) (io.ReadCloser, error) {
	return failingCloser{strings.NewReader(""), a.getErr}, nil
}

type failingCloser struct {
	io.Reader
	err error
}

func (f failingCloser) Close() error { return f.err }

// A container is closed once its removal succeeded (a failed one may be
// retried); closed, it refuses execs and copies. A failed transfer is
// reported before what the broken archive made of the extraction.
func TestContainer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &Container{ID: "id", Name: "sanddune-x", UID: 7, Archiver: archiver{errors.New("cp failed")}}
	if info := c.Info(); info.ID != "id" || *info.UID != 7 || info.RepoPath != WorkspaceDir {
		t.Fatalf("info %+v", info)
	}
	if _, cwd, err := c.PrepareExec(sdk.ExecRequest{Shell: "true", Cwd: "sub"}); err != nil || cwd != WorkspaceDir+"/sub" {
		t.Fatalf("exec: %q %v", cwd, err)
	}
	if _, _, err := c.PrepareExec(sdk.ExecRequest{Argv: []string{"true"}, Cwd: "/etc"}); err == nil || !strings.HasPrefix(err.Error(), "exec: cwd:") {
		t.Fatalf("cwd outside: %v", err)
	}
	if err := c.CopyIn(ctx, t.TempDir(), "in"); err != nil {
		t.Fatalf("copy in: %v", err)
	}
	if err := c.CopyOut(ctx, "x", t.TempDir()+"/x"); err == nil || err.Error() != "copy out x: cp failed" {
		t.Fatalf("copy out: %v", err)
	}
	removes := 0
	remove := func(ctx context.Context) error {
		removes++
		if removes == 1 {
			return errors.New("busy")
		}
		return ctx.Err()
	}
	if err := c.CloseWith(ctx, time.Minute, remove); err == nil || err.Error() != "remove container sanddune-x: busy" || c.Closed() {
		t.Fatalf("failed removal: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.CloseWith(cancelled, time.Minute, remove); err != nil || !c.Closed() {
		t.Fatalf("removal with a cancelled context: %v", err)
	}
	if err := c.CloseWith(ctx, time.Minute, remove); err != nil || removes != 2 {
		t.Fatalf("second Close: %v, %d removals", err, removes)
	}
	if _, _, err := c.PrepareExec(sdk.ExecRequest{Shell: "true"}); !errors.Is(err, sandboxkit.ErrClosed) {
		t.Fatalf("exec after close: %v", err)
	}
	if err := c.CopyIn(ctx, t.TempDir(), "in"); !errors.Is(err, sandboxkit.ErrClosed) {
		t.Fatalf("copy after close: %v", err)
	}
}

// Base describes a bind-mount engine and answers for its block through
// its decoder.
func TestBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := Base{Engine: Engine{Name: "acme", Title: "Acme"}, Version: "1", TTY: true,
		Attributes: []sdk.Attribute{{Name: "own", Type: cty.String}},
		Decode: func(cfg sdk.Config) (Config, sdk.Diagnostics) {
			var d sandboxkit.Decoder
			return Decode(&d, cfg.Value), d.Diags
		}}
	info, _ := b.Info(ctx)
	if c := info.Sandbox; c.Contract != sdk.ContractBindMount || !c.TTY || !c.NetworkNone || !c.Sudo || !c.Confines {
		t.Fatalf("info %+v %+v", info, info.Sandbox)
	}
	if s, _ := b.ConfigSchema(ctx); s.Attributes[len(s.Attributes)-1].Name != "own" {
		t.Fatalf("schema %+v", s.Attributes)
	}
	desc, err := b.Describe(ctx, sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")})})})
	if err != nil || desc.Env["A"] != "1" {
		t.Fatalf("describe %+v %v", desc, err)
	}
	if diags, _ := b.Configure(ctx, sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"cpus": cty.NumberIntVal(0)})}); len(diags) != 1 || diags[0].Attribute != "cpus" {
		t.Fatalf("configure %#v", diags)
	}
}

// TestHostMounts: the host's mounts are bound under the home ("~/"), after
// the configured ones, left out where they overlap one, listed by Info,
// and their parents under the home are owned by the container user.
func TestHostMounts(t *testing.T) {
	t.Parallel()
	asked := sdk.Mount{HostPath: "/tmp/sessions", SandboxPath: "~/.claude/projects"}
	req := sdk.CreateRequest{WorktreePath: "/w", Mounts: []sdk.Mount{asked}}
	bs, err := Binds(req, nil)
	want := Bind{Source: "/tmp/sessions", Target: "/home/agent/.claude/projects", Asked: true}
	if err != nil || len(bs) != 2 || bs[1] != want {
		t.Fatalf("binds %+v %v, want the worktree and %+v", bs, err, want)
	}
	if got := OwnedDirs(bs, true); !slices.Equal(got, []string{HomeDir, "/home/agent/.claude"}) {
		t.Errorf("owned dirs %q", got)
	}
	c := Container{Binds: bs}
	if got := c.Info().Mounts; !slices.Equal(got, []sdk.Mount{{HostPath: "/tmp/sessions", SandboxPath: "/home/agent/.claude/projects"}}) {
		t.Errorf("Info().Mounts = %+v", got)
	}
	for _, m := range []sdk.Mount{{HostPath: "/x", SandboxPath: "/home/agent/.claude"}, {HostPath: "/x", SandboxPath: "/home/agent/.claude/projects/p"}} {
		bs, err := Binds(sdk.CreateRequest{Mounts: []sdk.Mount{m, asked}}, nil)
		if err != nil || len(bs) != 1 || bs[0].Target != m.SandboxPath {
			t.Errorf("the host's mount beside %s: binds %+v %v, want it left out", m.SandboxPath, bs, err)
		}
	}
	for _, m := range []sdk.Mount{{HostPath: "rel", SandboxPath: "~/x"}, {HostPath: "/x", SandboxPath: "x"}} {
		if _, err := Binds(sdk.CreateRequest{Mounts: []sdk.Mount{m}}, nil); err == nil {
			t.Errorf("mount %+v accepted", m)
		}
	}
}

// TestOwnMounts: a host mount's directory is given to the container user
// (as root), kept when the user owns it already, left out, with a
// progress report, when it cannot be given (not root), and left out when
// none can be mounted here.
func TestOwnMounts(t *testing.T) {
	t.Parallel()
	spec := func(dir string, uid int) (Spec, *[]string) {
		var reports []string
		s := Spec{UID: uid, GID: uid, Binds: []Bind{{Source: "/w", Target: WorkspaceDir}, {Source: dir, Target: "/home/agent/.s", Asked: true}}}
		return s, &reports
	}
	report := func(r *[]string) sdk.CreateRequest {
		return sdk.CreateRequest{Progress: func(p sdk.Progress) { *r = append(*r, p.Message) }}
	}
	dir := t.TempDir()
	s, reports := spec(dir, os.Getuid())
	s.OwnMounts(report(reports), "")
	if len(s.Binds) != 2 || len(*reports) != 0 {
		t.Errorf("a directory the container user owns: binds %+v, reports %q", s.Binds, *reports)
	}
	s, reports = spec(dir, os.Getuid())
	s.OwnMounts(report(reports), "the engine maps user ids")
	if len(s.Binds) != 1 || len(*reports) != 0 {
		t.Errorf("mapped ids: binds %+v, reports %q; want the mount left out", s.Binds, *reports)
	}
	if os.Geteuid() != 0 {
		s, reports = spec(dir, os.Getuid()+1)
		s.OwnMounts(report(reports), "")
		if len(s.Binds) != 1 || len(*reports) != 1 || !strings.Contains((*reports)[0], dir) {
			t.Errorf("another user's directory, not root: binds %+v, reports %q; want it left out", s.Binds, *reports)
		}
		return
	}
	s, reports = spec(dir, 4321)
	s.OwnMounts(report(reports), "")
	fi, err := os.Stat(dir)
	if err != nil || len(s.Binds) != 2 || fi.Sys().(*syscall.Stat_t).Uid != 4321 {
		t.Errorf("as root for uid 4321: binds %+v, reports %q, %v", s.Binds, *reports, err)
	}
}
