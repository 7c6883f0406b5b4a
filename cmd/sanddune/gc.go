package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

func newGCCommand(g *globals) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what dead runs left behind: sandboxes and clean worktrees",
		Long: `Remove sandbox resources (containers...) labelled by runs whose sanddune process is gone,
and clean worktrees in .sanddune/worktrees that no live run holds. A worktree with uncommitted
work is always kept. --dry-run shows what would be removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			wd, _ := os.Getwd()
			failed := gcResources(ctx, g, wd, out, dryRun)
			if repo, err := worktree.Open(ctx, wd); err == nil {
				swept, err := repo.Sweep(ctx, dryRun)
				if err != nil {
					fmt.Fprintf(os.Stderr, "worktrees: %v\n", err)
					failed = true
				}
				for _, s := range swept {
					fmt.Fprintf(out, "worktree %s: %s\n", s.Path, s.Action)
				}
			}
			if failed {
				return &exitError{code: exitFailure, err: errors.New("some resources could not be listed or removed (see above)")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only show what would be removed")
	return cmd
}

// gcResources asks every sandbox plugin for the resources it holds and
// removes those whose run's sanddune process is gone.
func gcResources(ctx context.Context, g *globals, wd string, out io.Writer, dryRun bool) (failed bool) {
	host := g.newHost(wd)
	defer host.Close()
	for _, l := range host.List(ctx) {
		if l.Err != nil || l.Info.Kind != sdk.KindSandbox {
			continue
		}
		c, err := host.Resolve(ctx, sdk.KindSandbox, l.Info.Name)
		if err != nil {
			continue
		}
		rl, ok := c.Provider.(sdk.ResourceLister)
		if !ok {
			continue
		}
		res, err := rl.ListResources(ctx)
		if errors.Is(err, sdk.ErrNotSupported) {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox %s: listing resources: %v\n", l.Info.Name, err)
			failed = true
			continue
		}
		for _, r := range res {
			if !orphaned(r.Labels) {
				continue
			}
			if dryRun {
				fmt.Fprintf(out, "sandbox %s: would remove %s (run %s)\n", l.Info.Name, r.ID, r.Labels[sdk.LabelRun])
				continue
			}
			if err := rl.RemoveResource(ctx, r.ID); err != nil {
				fmt.Fprintf(os.Stderr, "sandbox %s: removing %s: %v\n", l.Info.Name, r.ID, err)
				failed = true
				continue
			}
			fmt.Fprintf(out, "sandbox %s: removed %s (run %s)\n", l.Info.Name, r.ID, r.Labels[sdk.LabelRun])
		}
	}
	return failed
}

// orphaned reports whether a resource's run is certainly dead: it was made
// on this host by a sanddune process that no longer exists.
func orphaned(labels map[string]string) bool {
	host, _ := os.Hostname()
	if labels[sdk.LabelHost] != host {
		return false
	}
	pid, err := strconv.Atoi(labels[sdk.LabelPID])
	if err != nil || pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
