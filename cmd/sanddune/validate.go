package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
)

func newValidateCommand(g *globals) *cobra.Command {
	f := &configFlags{}
	var graph, preflight bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a config file without running anything",
		Long: `Plan the config without executing it: decode every provider block against its plugin's
schema, let each plugin check its block, and check that every run is possible (branch strategy,
sudo hooks, env...). It reaches no daemon and no cloud, unless --preflight asks each sandbox
provider the questions a run starts with (is the image there, does the runtime start, do the
credentials work); no sandbox is made and nothing is left.
Problems are printed with file:line:col and a snippet. Exit code 1 when there are errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := planConfig(cmd.Context(), g, f, core.Selection{Strict: true}, core.RunOptions{}, 1)
			if err != nil {
				if ee, ok := err.(*exitError); ok && ee.code == exitUsage {
					ee.code = exitFailure
				}
				return err
			}
			defer p.host.Close()
			checked := ""
			if preflight {
				errs := core.Preflight(cmd.Context(), p.plan)
				for _, err := range errs {
					fmt.Fprintln(cmd.ErrOrStderr(), "✗", err)
				}
				if len(errs) > 0 {
					return &exitError{code: exitCode(errs[0]), err: fmt.Errorf("%s: %d preflight check(s) failed", f.path, len(errs))}
				}
				checked = "; preflight checks passed"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: %s%s\n", f.path, blockCounts(p.file), checked)
			if graph {
				nodes, _ := core.Graph(p.file) // its problems were the plan's
				return printGraph(cmd.OutOrStdout(), nodes, graphSessions(p.file), false, false)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&preflight, "preflight", false, "also run each sandbox provider's preflight checks (reaches its daemon or cloud; makes no sandbox)")
	cmd.Flags().BoolVar(&graph, "graph", false, "print the runs' dependency graph when valid (see sanddune graph)")
	return cmd
}

func newFmtCommand() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "fmt [FILE...]",
		Short: "Rewrite config files in canonical HCL style",
		Long:  `Rewrite HCL config files (default: ` + DefaultConfigPath + `) in canonical style. With --check, only report files that would change (exit 1).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{DefaultConfigPath}
			}
			changed := false
			for _, path := range args {
				src, diags := config.ReadSource(path)
				out := src
				if !diags.HasErrors() {
					out, diags = config.Format(src, path)
				}
				if diags.HasErrors() {
					config.WriteDiagnostics(os.Stderr, nil, diags, termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
					return &exitError{code: exitFailure, err: fmt.Errorf("%s has syntax errors", path)}
				}
				if bytes.Equal(src, out) {
					continue
				}
				changed = true
				if check {
					fmt.Fprintln(cmd.OutOrStdout(), path)
					continue
				}
				if err := os.WriteFile(path, out, 0o644); err != nil {
					return &exitError{code: exitFailure, err: err}
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			if check && changed {
				return &exitError{code: exitFailure, err: fmt.Errorf("some files are not formatted (run sanddune fmt)")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "report unformatted files without rewriting them")
	return cmd
}

// blockCounts says what a valid file holds: its runs, and its sessions
// and pipelines when it has any, then its provider blocks.
func blockCounts(f *config.File) string {
	parts := []string{fmt.Sprintf("%d run(s)", len(f.Runs))}
	if n := len(f.Sessions); n > 0 {
		parts = append(parts, fmt.Sprintf("%d session(s)", n))
	}
	if n := len(f.Pipelines); n > 0 {
		parts = append(parts, fmt.Sprintf("%d pipeline(s)", n))
	}
	parts = append(parts, fmt.Sprintf("%d sandbox(es)", len(f.Sandboxes)), fmt.Sprintf("%d agent(s)", len(f.Agents)))
	return strings.Join(parts, ", ")
}
