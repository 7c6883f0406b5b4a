package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

func newGCCommand(g *globals) *cobra.Command {
	var opts gc.Options
	var flags configFlags
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Clean up what dead runs left behind, salvaging their work first",
		Long: `Remove sandbox resources (containers, sandbox directories...) labelled by runs on this
repository whose sanddune process is gone (--all-repos: runs on any repository of this host;
outside a repository gc always looks at all), clean worktrees in .sanddune/worktrees that no live run holds, lock
files of dead processes, temporary run branches that hold nothing, and the temporary directories
(sync bundles, plugin sockets) of dead sanddune processes.

gc looks for sandbox resources with each sandbox block of the config file (-c, as for run: the
block's endpoint, credentials, cluster, namespace...), and with each installed sandbox plugin's
defaults. Without a usable config file it warns and looks with the defaults only.

An isolated sandbox (e.g. local) may hold commits and uncommitted changes that its run never
synced out: gc first brings the commits onto the run's branch (or a rescue branch if that branch
moved) and saves the uncommitted work as a patch under .sanddune/patches, and removes the sandbox
only then. A sandbox whose work cannot be salvaged is kept, with the reason; --force removes it
anyway. A worktree with uncommitted work is always kept. --dry-run changes nothing and shows what
would be salvaged and removed, and where gc looked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			if _, err := flags.varMap(); err != nil {
				return err
			}
			wd, _ := os.Getwd()
			file := gcConfig(ctx, &flags)
			var host *pluginhost.Host
			var providers []gc.Provider
			if file != nil {
				host = g.newHost(file.Dir, file.RequiredPlugins...)
				ps, diags := core.GCProviders(ctx, file, host)
				if len(diags) > 0 {
					file.WriteDiagnostics(os.Stderr, diags.HCL(), termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
				}
				if diags.HasErrors() {
					fmt.Fprintf(os.Stderr, "sanddune gc: %s has errors (see above): gc looks without the sandbox blocks that have them\n", file.Path)
				}
				providers = ps
			} else {
				host = g.newHost(wd)
			}
			defer host.Close()
			for _, l := range host.List(ctx) {
				if l.Err != nil || l.Info.Kind != sdk.KindSandbox {
					continue
				}
				if c, err := host.Resolve(ctx, sdk.KindSandbox, l.Info.Name); err == nil {
					if p, ok := c.Provider.(sdk.SandboxProvider); ok {
						providers = append(providers, gc.Provider{Name: l.Info.Name, Provider: p})
					}
				}
			}
			repo, err := worktree.Open(ctx, wd)
			if err != nil {
				repo = nil // outside a repository: sandboxes only
			}
			rep := gc.Run(ctx, repo, providers, opts)
			if opts.DryRun {
				printLookedAt(out, providers, file)
			}
			failed := printGC(out, rep, opts.DryRun, opts.AllRepos || repo == nil)
			for _, err := range rep.Errors {
				fmt.Fprintln(os.Stderr, err)
				failed = true
			}
			if failed {
				return &exitError{code: exitFailure, err: errors.New("some resources could not be listed, salvaged or removed (see above)")}
			}
			return nil
		},
	}
	flags.register(cmd)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "only show what would be salvaged and removed, and where gc looked")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "also remove isolated sandboxes whose work cannot be salvaged (it is lost)")
	cmd.Flags().BoolVar(&opts.AllRepos, "all-repos", false, "also collect what dead runs on other repositories of this host left (by default only this repository's)")
	return cmd
}

// gcConfig loads the config file whose sandbox blocks gc looks with; nil,
// with a warning on stderr, when there is none or it cannot be loaded.
func gcConfig(ctx context.Context, f *configFlags) *config.File {
	if f.path == DefaultConfigPath && !fileExists(findDefaultConfig(ctx, f.path)) {
		fmt.Fprintf(os.Stderr, "sanddune gc: no config file %s: looking with each sandbox plugin's defaults only (-c FILE names another)\n", f.path)
		return nil
	}
	file, _, err := f.load(ctx) // its problems are printed
	if err != nil {
		fmt.Fprintf(os.Stderr, "sanddune gc: %v: looking with each sandbox plugin's defaults only\n", err)
		return nil
	}
	return file
}

// printLookedAt says which providers gc asked, with which config.
func printLookedAt(w io.Writer, ps []gc.Provider, file *config.File) {
	var names []string
	for _, p := range ps {
		if p.Block == "" {
			names = append(names, p.Name+" (defaults)")
		} else {
			names = append(names, fmt.Sprintf("%s (%s, from %s)", p.Block, p.Name, file.Path))
		}
	}
	if len(names) == 0 {
		names = []string{"no sandbox plugin is installed"}
	}
	fmt.Fprintf(w, "looked at: %s\n", strings.Join(names, ", "))
}

// printGC prints what gc did, or that there was nothing to do; it reports
// whether a removal failed.
func printGC(w io.Writer, rep gc.Report, dryRun, allRepos bool) (failed bool) {
	if rep.OtherRepos > 0 {
		defer fmt.Fprintf(w, "%d sandbox(es) of dead runs on other repositories left alone (sanddune gc --all-repos collects them too)\n", rep.OtherRepos)
	}
	if len(rep.Locks)+len(rep.Sandboxes)+len(rep.Worktrees)+len(rep.Branches)+len(rep.Temp)+len(rep.Errors) == 0 {
		fmt.Fprintln(w, "nothing to clean up")
		return false
	}
	for _, l := range rep.Locks {
		fmt.Fprintf(w, "lock %s: %s (run %s, pid %d is gone)\n", l.Info.Key, l.Action, l.Info.Run, l.Info.PID)
	}
	for _, s := range rep.Sandboxes {
		prefix := "sandbox " + s.Provider + ": "
		what := fmt.Sprintf("%s (run %s)", s.Resource.ID, s.Run())
		if b := s.Block(); b != "" {
			what = fmt.Sprintf("%s (run %s, %s)", s.Resource.ID, s.Run(), b)
		}
		if repo := s.Resource.Labels[gc.LabelRepo]; allRepos && repo != "" {
			what = strings.TrimSuffix(what, ")") + ", repository " + repo + ")"
		}
		if s.Salvage != nil && (dryRun || s.Salvage.Landed) {
			printSalvage(w, prefix, what, s.Salvage, dryRun)
		}
		if s.SalvageFailed {
			failed = true
		}
		switch s.Action {
		case gc.Removed, gc.WouldRemove:
			line := prefix + string(s.Action) + " " + what
			if s.Reason != "" {
				line += ": " + s.Reason
			}
			fmt.Fprintln(w, line)
		case gc.Kept:
			fmt.Fprintf(w, "%skept %s: %s\n", prefix, what, s.Reason)
			if s.Salvage != nil && !dryRun {
				fmt.Fprintf(w, "  it holds %d commit(s) not on the host%s\n", len(s.Salvage.Commits), map[bool]string{true: " and uncommitted work"}[s.Salvage.Dirty])
			}
			if s.Inspect != "" {
				fmt.Fprintf(w, "  %s\n", s.Inspect)
			}
		case gc.Failed:
			fmt.Fprintf(os.Stderr, "%sremoving %s: %s\n", prefix, what, s.Reason)
			failed = true
		}
	}
	for _, s := range rep.Worktrees {
		fmt.Fprintf(w, "worktree %s: %s\n", s.Path, s.Action)
	}
	for _, b := range rep.Branches {
		fmt.Fprintf(w, "branch %s: %s\n", b.Branch, b.Action)
	}
	for _, d := range rep.Temp {
		fmt.Fprintf(w, "temporary directory %s: %s (pid %d is gone)\n", d.Path, d.Action, d.PID)
	}
	return failed
}

// printSalvage says what unsynced work came (or would come) out of a
// sandbox and where it is now.
func printSalvage(w io.Writer, prefix, what string, s *gc.Salvage, dryRun bool) {
	var parts []string
	if n := len(s.Commits); n > 0 {
		onto := "onto branch " + s.Branch
		switch {
		case s.RescueBranch != "":
			onto = "onto the new branch " + s.RescueBranch + " (the run's branch moved meanwhile; merge it with `git merge " + s.RescueBranch + "`)"
		case worktree.IsTempBranch(s.Branch) && !dryRun:
			onto += " (merge it with `git merge " + s.Branch + "`)"
		}
		parts = append(parts, fmt.Sprintf("%d commit(s) %s", n, onto))
	}
	if s.Dirty {
		if s.PatchPath != "" {
			parts = append(parts, "uncommitted work as the patch "+s.PatchPath+" (`git apply` it on that branch)")
		} else {
			parts = append(parts, "uncommitted work as a patch under "+s.Repo+"/"+worktree.StateDirName+"/patches")
		}
	}
	verb := "salvaged"
	if dryRun {
		verb = "would salvage"
	}
	fmt.Fprintf(w, "%s%s from %s: %s\n", prefix, verb, what, strings.Join(parts, "; "))
	for _, c := range s.Commits {
		fmt.Fprintf(w, "  %s %s\n", c.Short(), c.Subject)
	}
}
