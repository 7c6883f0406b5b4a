// Package gc cleans up what runs whose sanddune process died (kill -9, a
// crash, a reboot) left behind, without losing their work: `sanddune gc`
// is a thin layer over Run.
//
//	rep := gc.Run(ctx, repo, []gc.Provider{{Name: "local", Provider: p}}, gc.Options{DryRun: dry})
//	// rep.Sandboxes, rep.Worktrees, rep.Locks, rep.Branches, rep.Errors
//
// Each Provider carries the config of a sandbox block (or the zero Config,
// the provider's defaults): the resource calls get it, so gc looks where
// that block's sandboxes live (an API endpoint, a cluster, a service).
// A resource two of them list (the same plugin, the same ID) is collected
// once, by the first.
//
// A provider resource (sdk.ResourceLister) is orphaned when its labels say
// it was made on this host by a sanddune process that is gone (Orphaned).
// With Options.Mine, gc collects the resources of this process instead
// (OfRun), through a sandbox plugin relaunched after it died (or was
// killed before it had shut down).
// Resources of bind-mount providers are removed: the work lives in the
// host worktree. A resource of an isolated provider can hold the agent's
// commits and uncommitted changes that were never synced out, so before it
// is removed gc salvages them:
//
//  1. the labels LabelRepo, LabelBranch, LabelBase and LabelRunName say
//     where the work belongs;
//  2. the provider reattaches to the resource (sdk.SandboxRecoverer) and
//     gitsync.Inspect looks for commits Base..HEAD and uncommitted files;
//  3. with the run's branch locked, gitsync.SyncOut brings the commits onto
//     the branch (or a rescue branch when the branch moved) and saves the
//     uncommitted work as a patch under .sanddune/patches;
//  4. only then is the resource removed.
//
// A resource whose work cannot be salvaged is kept with the reason: the
// provider cannot reattach, its labels are incomplete (older sanddune),
// its repository is gone, or the salvage failed. Options.Force removes
// those anyway, losing what they hold. With Options.DryRun gc inspects
// and reports, and changes nothing.
//
// In the current repository gc also removes lock files of dead processes
// (worktree.Repo.SweepLocks), clean worktrees no live run holds (Sweep),
// and temporary merge-to-head branches that hold nothing (SweepBranches;
// the branches of kept sandboxes stay). Everywhere it removes the
// temporary directories of dead sanddune processes (core/internal/tempdir).
package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/missingstudio/sanddune/core/internal/proc"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Labels the host sets on every sandbox besides the sdk's (sdk.LabelRun,
// LabelSandbox, LabelPID, LabelHost): where the run's work belongs, so
// that gc can salvage an isolated sandbox whose run died (the host
// repository, the run's branch and the commit the sandbox started from),
// the run's name and the sanddune version.
const (
	LabelRunName = "sanddune.run-name"
	LabelRepo    = "sanddune.repo"
	LabelBranch  = "sanddune.branch"
	LabelBase    = "sanddune.base"
	LabelVersion = "sanddune.version"
)

// Options tune a collection.
type Options struct {
	// DryRun reports what would be done and changes nothing.
	DryRun bool
	// Force removes isolated sandboxes whose work cannot be salvaged, with
	// that work.
	Force bool
	// Mine collects the resources of this (live) sanddune process
	// instead of the orphans of dead ones: those its runs left through a
	// sandbox plugin that died or was killed before it had shut down,
	// collected through the plugin relaunched (ADR 0016).
	Mine bool
	// Run narrows Mine to one run, by its sdk.LabelRun value: a run whose
	// sandbox plugin died, which holds its branch's lock already.
	Run string
}

// Provider is a sandbox provider to collect from, with a config.
type Provider struct {
	// Name names the provider in reports (the plugin name).
	Name     string
	Provider sdk.SandboxProvider
	// Config is a sandbox block's config, decoded against the provider's
	// schema; the zero Config for the provider's defaults. Block is that
	// block's address ("" with the defaults).
	Config sdk.Config
	Block  string
}

// String names the provider and the config it is asked with.
func (p Provider) String() string {
	if p.Block == "" {
		return p.Name + " (defaults)"
	}
	return p.Block + " (" + p.Name + ")"
}

// Action is what happened to an orphaned sandbox.
type Action string

const (
	Removed     Action = "removed"
	WouldRemove Action = "would remove"
	Kept        Action = "kept"
	// Failed: the provider could not remove it (Sandbox.Reason says why).
	Failed Action = "failed"
)

// Sandbox is what gc did (or would do) with one orphaned resource.
type Sandbox struct {
	Provider string
	Resource sdk.Resource
	// Isolated: the provider's contract is not sdk.ContractBindMount, so
	// the sandbox may hold work of its own.
	Isolated bool
	Action   Action
	// Reason says why it was kept or removing it failed, or, when Force
	// removed a sandbox that could not be salvaged, why.
	Reason string
	// Salvage is the unsynced work found in the sandbox: brought back to
	// the host (Salvage.Landed), or to be with DryRun. Nil when there was
	// none.
	Salvage *Salvage
	// SalvageFailed: the sandbox holds (or may hold) unsynced work that gc
	// tried and failed to bring back; Reason says why.
	SalvageFailed bool
	// Inspect, for a kept sandbox that gc reattached to, says where its
	// repository is and how to look at the unsynced work.
	Inspect string
}

// Block is the address of the sandbox block the resource was made for,
// from its labels ("" when they do not say).
func (s Sandbox) Block() string { return s.Resource.Labels[sdk.LabelSandbox] }

// Run is the run name from the resource's labels (its id for older runs).
func (s Sandbox) Run() string {
	if n := s.Resource.Labels[LabelRunName]; n != "" {
		return n
	}
	return s.Resource.Labels[sdk.LabelRun]
}

// Salvage is the unsynced work of one sandbox.
type Salvage struct {
	// Repo is the host repository the work went (or goes) to.
	Repo string
	// Branch holds Commits: the run's branch, or RescueBranch.
	Branch string
	// Commits are the sandbox's commits beyond the run's base, oldest first.
	Commits []worktree.Commit
	// Landed: the commits are on Branch and the patch at PatchPath.
	Landed bool
	// RescueBranch is set when the run's branch moved on the host and the
	// commits went to this new branch instead.
	RescueBranch string
	// Dirty: the sandbox had uncommitted work; PatchPath is where it was
	// saved (empty with DryRun).
	Dirty     bool
	PatchPath string
}

// Report is what Run did.
type Report struct {
	Sandboxes []Sandbox
	Worktrees []worktree.Swept
	Locks     []worktree.SweptLock
	Branches  []worktree.SweptBranch
	// Temp are the temporary directories of dead sanddune processes
	// (sync bundles, plugin sockets, session copies).
	Temp []SweptTemp
	// Errors are failures that did not stop the rest (a provider that could
	// not list its resources, a sweep that failed).
	Errors []error
}

// Run collects the orphaned sandboxes of providers, salvaging isolated
// ones first, and, when repo is not nil, sweeps its stale locks, worktrees
// and empty temporary branches.
func Run(ctx context.Context, repo *worktree.Repo, providers []Provider, opts Options) Report {
	var rep Report
	if repo != nil { // first, so the report names the locks the salvage would break
		var err error
		if rep.Locks, err = repo.SweepLocks(opts.DryRun); err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("locks: %w", err))
		}
	}
	seen := map[[2]string]bool{} // plugin, resource ID
	for _, p := range providers {
		sbs, err := sandboxes(ctx, p.Name, p.Provider, p.Config, opts, func(id string) bool {
			k := [2]string{p.Name, id}
			dup := seen[k]
			seen[k] = true
			return dup
		})
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Errorf("sandbox %s: %w", p, err))
		}
		rep.Sandboxes = append(rep.Sandboxes, sbs...)
	}
	var err error
	if rep.Temp, err = sweepTemp(opts.DryRun); err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("temporary directories: %w", err))
	}
	if repo == nil {
		return rep
	}
	if rep.Worktrees, err = repo.Sweep(ctx, opts.DryRun); err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("worktrees: %w", err))
	}
	if rep.Branches, err = repo.SweepBranches(ctx, opts.DryRun, keepBranches(repo, rep.Sandboxes)); err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("branches: %w", err))
	}
	return rep
}

// keepBranches are the branches of repo that sandboxes still need, with
// the reason: those of kept sandboxes, and with a dry run those that would
// receive salvaged commits.
func keepBranches(repo *worktree.Repo, sbs []Sandbox) map[string]string {
	keep := map[string]string{}
	for _, s := range sbs {
		l := s.Resource.Labels
		if !s.Isolated || l[LabelBranch] == "" || !sameDir(l[LabelRepo], repo.Root) {
			continue
		}
		switch {
		case s.Action == Kept || s.Action == Failed:
			keep[l[LabelBranch]] = "its run's sandbox " + s.Resource.ID + " is kept"
		case s.Action == WouldRemove && s.Salvage != nil && len(s.Salvage.Commits) > 0:
			keep[l[LabelBranch]] = "would receive the salvaged commits of " + s.Resource.ID
		}
	}
	return keep
}

func sameDir(a, b string) bool {
	if a == "" {
		return false
	}
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// Sandboxes collects the orphaned resources of one sandbox provider, with
// cfg the config its resource calls get (the zero Config for its
// defaults). A provider that does not list resources has none.
func Sandboxes(ctx context.Context, name string, p sdk.SandboxProvider, cfg sdk.Config, opts Options) ([]Sandbox, error) {
	return sandboxes(ctx, name, p, cfg, opts, func(string) bool { return false })
}

// sandboxes is Sandboxes leaving alone the resources seen (collected
// already).
func sandboxes(ctx context.Context, name string, p sdk.SandboxProvider, cfg sdk.Config, opts Options, seen func(id string) bool) ([]Sandbox, error) {
	rl, ok := p.(sdk.ResourceLister)
	if !ok {
		return nil, nil
	}
	res, err := rl.ListResources(ctx, cfg)
	if errors.Is(err, sdk.ErrNotSupported) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing resources: %w", err)
	}
	var out []Sandbox
	var contract sdk.Contract
	for _, r := range res {
		if opts.Mine && !OfRun(r.Labels, opts.Run) || !opts.Mine && !Orphaned(r.Labels) || seen(r.ID) {
			continue
		}
		if contract == "" {
			info, err := p.Info(ctx)
			if err != nil {
				return out, err
			}
			contract = "unknown"
			if info.Sandbox != nil && info.Sandbox.Contract != "" {
				contract = info.Sandbox.Contract
			}
		}
		// Anything but bind-mount may hold work of its own.
		isolated := contract != sdk.ContractBindMount
		s := Sandbox{Provider: name, Resource: r, Isolated: isolated}
		rs := resources{rl, cfg}
		if isolated {
			salvage(ctx, p, rs, &s, opts)
		} else {
			remove(ctx, rs, &s, opts)
		}
		out = append(out, s)
	}
	return out, nil
}

// Orphaned reports whether a resource's run is certainly dead: it was made
// on this host by a sanddune process that no longer exists.
func Orphaned(labels map[string]string) bool {
	host, _ := os.Hostname()
	if labels[sdk.LabelHost] != host {
		return false
	}
	pid, err := strconv.Atoi(labels[sdk.LabelPID])
	if err != nil || pid <= 0 {
		return false
	}
	return proc.Gone(pid)
}

// OfRun reports whether a resource belongs to run (its sdk.LabelRun;
// "" for any) of this sanddune process.
func OfRun(labels map[string]string, run string) bool {
	host, _ := os.Hostname()
	return (run == "" || labels[sdk.LabelRun] == run) && labels[sdk.LabelHost] == host && labels[sdk.LabelPID] == strconv.Itoa(os.Getpid())
}

// resources is a provider's resource calls with the config they get.
type resources struct {
	sdk.ResourceLister
	cfg sdk.Config
}

// remove removes the resource (or says it would).
func remove(ctx context.Context, rl resources, s *Sandbox, opts Options) {
	if opts.DryRun {
		s.Action = WouldRemove
		return
	}
	if err := rl.RemoveResource(ctx, rl.cfg, s.Resource.ID); err != nil {
		s.Action, s.Reason = Failed, err.Error()
		return
	}
	s.Action = Removed
}
