package enginetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/core/internal/gitsync"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// orphanRun is what a run of a killed sanddune left: a local sandbox
// synced in and worked in, labelled with a dead pid, and its temp branch.
type orphanRun struct {
	repo, branch, base string
	sandbox            sdk.Sandbox // the dead run's handle, for the test's own checks
	labels             map[string]string
}

// newOrphan creates a local sandbox for a run of repo on a new temp branch
// as the engine does, syncs it in when sync is set, and runs work (shell)
// in it as the agent. The sandbox's labels name a dead sanddune process.
func newOrphan(t *testing.T, p sdk.SandboxProvider, repo string, sync bool, work string) *orphanRun {
	t.Helper()
	ctx := context.Background()
	o := &orphanRun{repo: repo, branch: "sanddune/gctest/20260101-000000-" + randHex(t), base: git(t, repo, "rev-parse", "main")}
	git(t, repo, "branch", o.branch, o.base)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	runID := "gctest-" + randHex(t)
	o.labels = map[string]string{
		sdk.LabelRun: runID, gc.LabelRunName: "gctest", sdk.LabelPID: strconv.Itoa(dead.Process.Pid), sdk.LabelHost: host,
		gc.LabelRepo: repo, gc.LabelBranch: o.branch, gc.LabelBase: o.base,
	}
	sb, err := p.Create(ctx, sdk.CreateRequest{
		Config: sdk.Config{Value: cty.EmptyObjectVal}, RunID: runID, RunName: "gctest", HostRepoPath: repo, Labels: o.labels,
	})
	if err != nil {
		t.Fatal(err)
	}
	o.sandbox = sb
	if sync {
		if err := gitsync.SyncIn(ctx, sb, gitsync.Spec{HostRepo: repo, Branch: o.branch, Base: o.base, RunName: "gctest"}); err != nil {
			t.Fatal(err)
		}
	}
	if work != "" {
		res, err := sb.Exec(ctx, sdk.ExecRequest{Shell: work}, func(sdk.OutputLine) {})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("agent work: %+v, %v", res, err)
		}
	}
	return o
}

func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// agentWork commits a file and leaves another one uncommitted.
const agentWork = "echo work > work.txt && git add work.txt && " +
	"git -c user.name=Agent -c user.email=agent@example.com commit -qm 'agent: work' && echo wip > wip.txt"

// localProvider is the local sandbox over the plugin protocol, its
// directories in a private temp dir.
func localProvider(t *testing.T) sdk.SandboxProvider {
	t.Setenv("TMPDIR", t.TempDir())
	return plugintest.Sandbox(t, local.New())
}

func collect(t *testing.T, p sdk.SandboxProvider, opts gc.Options) []gc.Sandbox {
	t.Helper()
	sbs, err := gc.Sandboxes(context.Background(), "local", p, sdk.Config{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sbs
}

func only(t *testing.T, sbs []gc.Sandbox) gc.Sandbox {
	t.Helper()
	if len(sbs) != 1 {
		t.Fatalf("gc reported %d sandboxes, want 1: %+v", len(sbs), sbs)
	}
	return sbs[0]
}

func TestGCSalvagesAnIsolatedSandboxLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	o := newOrphan(t, p, repo, true, agentWork)
	dir := o.sandbox.Info().ID

	s := only(t, collect(t, p, gc.Options{DryRun: true}))
	if s.Action != gc.WouldRemove || !s.Isolated || s.Run() != "gctest" || s.Salvage == nil || len(s.Salvage.Commits) != 1 ||
		s.Salvage.Commits[0].Subject != "agent: work" || !s.Salvage.Dirty || s.Salvage.PatchPath != "" || s.Salvage.Branch != o.branch {
		t.Fatalf("dry run: %+v %+v", s, s.Salvage)
	}
	if got := git(t, repo, "rev-parse", o.branch); got != o.base || !exists(dir) || exists(filepath.Join(repo, ".sanddune", "patches")) {
		t.Fatalf("the dry run changed something: branch at %s, sandbox there %v", got, exists(dir))
	}

	s = only(t, collect(t, p, gc.Options{}))
	if s.Action != gc.Removed || s.Salvage == nil || len(s.Salvage.Commits) != 1 || s.Salvage.RescueBranch != "" {
		t.Fatalf("gc: %+v %+v", s, s.Salvage)
	}
	if got := git(t, repo, "log", "--format=%s|%an", o.base+".."+o.branch); got != "agent: work|Agent" {
		t.Errorf("branch %s beyond the base: %q", o.branch, got)
	}
	if got := git(t, repo, "rev-parse", o.branch); got != s.Salvage.Commits[0].SHA {
		t.Errorf("branch at %s, reported commit %s", got, s.Salvage.Commits[0].SHA)
	}
	patch, err := os.ReadFile(s.Salvage.PatchPath)
	if err != nil || !strings.Contains(string(patch), "+++ b/wip.txt") {
		t.Errorf("patch %s: %v\n%s", s.Salvage.PatchPath, err, patch)
	}
	if exists(dir) {
		t.Errorf("the salvaged sandbox %s is still there", dir)
	}
	if sbs := collect(t, p, gc.Options{}); len(sbs) != 0 {
		t.Errorf("a second gc found %+v", sbs)
	}
	assertClean(t, repo)
}

func TestGCRescuesWhenTheBranchMovedLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	o := newOrphan(t, p, repo, true, agentWork)
	git(t, repo, "switch", "-q", o.branch)
	write(t, filepath.Join(repo, "host.txt"), "host\n")
	git(t, repo, "add", "host.txt")
	git(t, repo, "commit", "-qm", "host moved on")
	git(t, repo, "switch", "-q", "main")
	moved := git(t, repo, "rev-parse", o.branch)

	s := only(t, collect(t, p, gc.Options{}))
	if s.Action != gc.Removed || s.Salvage == nil || s.Salvage.RescueBranch == "" || s.Salvage.Branch != s.Salvage.RescueBranch {
		t.Fatalf("gc: %+v %+v", s, s.Salvage)
	}
	if got := git(t, repo, "rev-parse", o.branch); got != moved {
		t.Errorf("the moved branch was changed to %s", got)
	}
	if got := git(t, repo, "log", "--format=%s", o.base+".."+s.Salvage.RescueBranch); got != "agent: work" {
		t.Errorf("rescue branch %s holds %q", s.Salvage.RescueBranch, got)
	}
}

// TestGCSalvageMovesTheFilesOfASandduneWorktreeLocal: the run's branch is
// checked out in a worktree of sanddune's (a kept one, core.CreateWorktree):
// the salvage moves its files with the branch.
func TestGCSalvageMovesTheFilesOfASandduneWorktreeLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	o := newOrphan(t, p, repo, true, agentWork)
	wt := filepath.Join(repo, ".sanddune", "worktrees", "kept")
	git(t, repo, "worktree", "add", "-q", wt, o.branch)

	s := only(t, collect(t, p, gc.Options{}))
	if s.Action != gc.Removed || s.Salvage == nil || s.Salvage.RescueBranch != "" || len(s.Salvage.Commits) != 1 {
		t.Fatalf("gc: %+v %+v", s, s.Salvage)
	}
	if got := git(t, repo, "rev-parse", o.branch); got != s.Salvage.Commits[0].SHA {
		t.Errorf("branch at %s, salvaged commit %s", got, s.Salvage.Commits[0].SHA)
	}
	if st := git(t, wt, "status", "--porcelain"); st != "" || !exists(filepath.Join(wt, "work.txt")) {
		t.Errorf("the worktree's files did not move with its branch: status %q", st)
	}
}

// TestGCSalvageLeavesTheUsersCheckoutAloneLocal: the run's branch is
// checked out in a tree of the user's: the branch does not move under it
// (its files would no longer match); the commits go to a rescue branch.
func TestGCSalvageLeavesTheUsersCheckoutAloneLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	o := newOrphan(t, p, repo, true, agentWork)
	mine := filepath.Join(t.TempDir(), "mine")
	git(t, repo, "worktree", "add", "-q", mine, o.branch)

	s := only(t, collect(t, p, gc.Options{}))
	if s.Action != gc.Removed || s.Salvage == nil || s.Salvage.RescueBranch == "" {
		t.Fatalf("gc: %+v %+v", s, s.Salvage)
	}
	if got := git(t, repo, "rev-parse", o.branch); got != o.base {
		t.Errorf("the checked-out branch was moved to %s", got)
	}
	if st := git(t, mine, "status", "--porcelain"); st != "" || exists(filepath.Join(mine, "work.txt")) {
		t.Errorf("the user's checkout changed: status %q", st)
	}
	if got := git(t, repo, "log", "--format=%s", o.base+".."+s.Salvage.RescueBranch); got != "agent: work" {
		t.Errorf("rescue branch %s holds %q", s.Salvage.RescueBranch, got)
	}
}

func TestGCRecreatesADeletedBranchLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	o := newOrphan(t, p, repo, true, agentWork)
	git(t, repo, "branch", "-D", o.branch)
	s := only(t, collect(t, p, gc.Options{}))
	if s.Action != gc.Removed || s.Salvage == nil || s.Salvage.Branch != o.branch {
		t.Fatalf("gc: %+v %+v", s, s.Salvage)
	}
	if got := git(t, repo, "log", "--format=%s", o.base+".."+o.branch); got != "agent: work" {
		t.Errorf("recreated branch %s holds %q", o.branch, got)
	}
}

func TestGCRemovesASandboxWithNothingUnsyncedLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	for _, sync := range []bool{false, true} { // died before the sync-in; did nothing after it
		o := newOrphan(t, p, repo, sync, "")
		s := only(t, collect(t, p, gc.Options{}))
		if s.Action != gc.Removed || s.Salvage != nil || s.Reason != "" || exists(o.sandbox.Info().ID) {
			t.Errorf("synced in %v: %+v %+v", sync, s, s.Salvage)
		}
	}
}

func TestGCKeepsWhatItCannotSalvageLocal(t *testing.T) {
	repo := newRepo(t)
	noRecover := func(t *testing.T) sdk.SandboxProvider {
		t.Setenv("TMPDIR", t.TempDir())
		l := local.New()
		return plugintest.Sandbox(t, struct {
			sdk.SandboxProvider
			sdk.ResourceLister
		}{l, l.(sdk.ResourceLister)})
	}
	for _, tc := range []struct {
		name      string
		provider  func(*testing.T) sdk.SandboxProvider
		setup     func(t *testing.T, o *orphanRun, p sdk.SandboxProvider)
		reason    string
		inspect   bool
		forceable bool
	}{
		{"OlderLabels", localProvider, func(t *testing.T, o *orphanRun, p sdk.SandboxProvider) {
			relabel(t, o, gc.LabelBase, "")
		}, "no sanddune.base label", false, true},
		{"NoRecover", noRecover, nil, "cannot reattach", false, true},
		{"RepoGone", localProvider, func(t *testing.T, o *orphanRun, p sdk.SandboxProvider) {
			relabel(t, o, gc.LabelRepo, filepath.Join(t.TempDir(), "gone"))
		}, "cannot be opened", false, true},
		{"SalvageFails", localProvider, func(t *testing.T, o *orphanRun, p sdk.SandboxProvider) {
			relabel(t, o, gc.LabelBase, strings.Repeat("0", 40))
		}, "salvaging its work failed", true, true},
		{"BranchInUse", localProvider, func(t *testing.T, o *orphanRun, p sdk.SandboxProvider) {
			r, err := worktree.Open(context.Background(), o.repo)
			if err != nil {
				t.Fatal(err)
			}
			l, err := r.Lock("branch "+o.branch, "live-run")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Release() })
		}, "is in use by run live-run", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.provider(t)
			o := newOrphan(t, p, repo, true, agentWork)
			if tc.setup != nil {
				tc.setup(t, o, p)
			}
			dir := o.sandbox.Info().ID
			for _, dry := range []bool{true, false} {
				s := only(t, collect(t, p, gc.Options{DryRun: dry}))
				if s.Action != gc.Kept || !strings.Contains(s.Reason, tc.reason) || (s.Inspect != "") != tc.inspect || !exists(dir) {
					t.Fatalf("dry run %v: %+v, want kept because %q", dry, s, tc.reason)
				}
				if tc.inspect && !strings.Contains(s.Inspect, "git -C "+o.sandbox.Info().RepoPath+" log") {
					t.Errorf("inspect hint %q", s.Inspect)
				}
			}
			if got := git(t, repo, "rev-parse", o.branch); got != o.base {
				t.Errorf("branch moved to %s", got)
			}
			s := only(t, collect(t, p, gc.Options{Force: true}))
			if tc.forceable != (s.Action == gc.Removed) || tc.forceable == exists(dir) {
				t.Errorf("--force: %+v, sandbox there %v", s, exists(dir))
			}
		})
	}
}

// relabel rewrites a label of the local sandbox, as an older sanddune or a
// moved repository would have left it.
func relabel(t *testing.T, o *orphanRun, key, value string) {
	t.Helper()
	o.labels[key] = value
	if value == "" {
		delete(o.labels, key)
	}
	data, err := json.Marshal(o.labels)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(o.sandbox.Info().ID, "sanddune-labels.json"), string(data))
}

func TestGCLeavesLiveRunsAloneLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	o := newOrphan(t, p, repo, true, agentWork)
	relabel(t, o, sdk.LabelPID, strconv.Itoa(os.Getpid()))
	if sbs := collect(t, p, gc.Options{Force: true}); len(sbs) != 0 || !exists(o.sandbox.Info().ID) {
		t.Fatalf("gc touched a live run's sandbox: %+v", sbs)
	}
}

// TestGCRunKeepsTheBranchOfAKeptSandboxLocal: the temp branch of a sandbox
// that could not be salvaged is not swept, although it holds nothing yet.
func TestGCRunKeepsTheBranchOfAKeptSandboxLocal(t *testing.T) {
	p := localProvider(t)
	repo := newRepo(t)
	kept := newOrphan(t, p, repo, true, agentWork)
	relabel(t, kept, gc.LabelBase, strings.Repeat("0", 40)) // its salvage fails
	empty := newOrphan(t, p, repo, true, "")
	r, err := worktree.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}

	rep := gc.Run(context.Background(), r, []gc.Provider{{Name: "local", Provider: p}}, gc.Options{})
	if len(rep.Errors) != 0 || len(rep.Sandboxes) != 2 {
		t.Fatalf("report %+v", rep)
	}
	actions := map[string]string{}
	for _, b := range rep.Branches {
		actions[b.Branch] = b.Action
	}
	if a := actions[kept.branch]; !strings.HasPrefix(a, "kept (its run's sandbox") {
		t.Errorf("branch of the kept sandbox: %q", a)
	}
	if a := actions[empty.branch]; a != "deleted" {
		t.Errorf("empty branch of the removed sandbox: %q", a)
	}
	if exists(empty.sandbox.Info().ID) || !exists(kept.sandbox.Info().ID) {
		t.Error("wrong sandbox removed")
	}
}
