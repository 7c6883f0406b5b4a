package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/worktree"
)

// DefaultConfigPath is where sanddune looks for its config.
const DefaultConfigPath = ".sanddune/sanddune.hcl"

// configFlags are the flags of the commands that read a config file.
type configFlags struct {
	path string
	vars []string
	repo string // run --repo: the host repo the runs are checked against
}

func (f *configFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.path, "config", "c", DefaultConfigPath, "config file (.hcl or .hcl.json)")
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a variable: --var KEY=VALUE (repeatable; overrides SANDDUNE_VAR_<KEY>)")
}

func (f *configFlags) varMap() (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range f.vars {
		k, v, ok := cutEq(kv)
		if !ok {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--var %q: want KEY=VALUE", kv)}
		}
		m[k] = v
	}
	return m, nil
}

func cutEq(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			return s[:i], s[i+1:], i > 0
		}
	}
	return "", "", false
}

// findDefaultConfig lets sanddune run from a repo's subdirectory: the
// default config path is looked up at the repo root, like git does.
func findDefaultConfig(ctx context.Context, path string) string {
	if path != DefaultConfigPath {
		return path
	}
	if fileExists(path) {
		return path
	}
	repo, err := worktree.Open(ctx, ".")
	if err != nil {
		return path
	}
	if p := filepath.Join(repo.Root, DefaultConfigPath); fileExists(p) {
		return p
	}
	return path
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// planned is a config file, planned.
type planned struct {
	file  *config.File
	plan  *core.RunPlan
	host  *pluginhost.Host
	diags hcl.Diagnostics // warnings
}

// configError is a config that does not plan: its message, and its
// diagnostics (printed on stderr already) for run --json.
type configError struct {
	err   error
	diags hcl.Diagnostics
}

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// planConfig loads a config file and plans it (core.Plan): the selected
// runs, with base as what every run gets from the command line.
// Diagnostics, warnings too, are printed on stderr; an error among them is
// a usage error (exit 2). The caller closes p.host.
func planConfig(ctx context.Context, g *globals, f *configFlags, sel core.Selection, base core.RunOptions, parallel int) (*planned, error) {
	file, diags, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	host := g.newHost(file.Dir, file.RequiredPlugins...)
	plan, err := core.Plan(ctx, core.Config{File: file, Plugins: host, Run: base, Parallel: parallel}, sel)
	if ctx.Err() != nil { // the errors may be the interruption's
		host.Close()
		return nil, &exitError{code: exitCancelled, err: errors.New("cancelled before any run started: nothing to clean up")}
	}
	diags = append(diags, plan.Diagnostics.HCL()...)
	if len(diags) > 0 {
		file.WriteDiagnostics(os.Stderr, diags, termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
	}
	if err != nil {
		host.Close()
		msg := fmt.Errorf("%s has errors (see above)", f.path)
		if !diags.HasErrors() { // e.g. no such run: nothing printed
			msg = err
		}
		return nil, &exitError{code: exitUsage, err: &configError{msg, diags}}
	}
	return &planned{file: file, plan: plan, host: host, diags: diags}, nil
}

// load finds and loads the config file of the flags: a usage error when
// there is none or it has errors (printed on stderr), else the file and
// its warnings.
func (f *configFlags) load(ctx context.Context) (*config.File, hcl.Diagnostics, error) {
	vars, err := f.varMap()
	if err != nil {
		return nil, nil, err
	}
	f.path = findDefaultConfig(ctx, f.path)
	if _, err := os.Stat(f.path); err != nil {
		hint := ""
		if f.path == DefaultConfigPath {
			hint = " (sanddune init writes one; or pass -c FILE)"
		}
		return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("config file %s: %w%s", f.path, errors.Unwrap(err), hint)}
	}
	file, diags := config.Load(f.path, vars, os.Environ())
	if diags.HasErrors() {
		file.WriteDiagnostics(os.Stderr, diags, termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
		return nil, nil, &exitError{code: exitUsage, err: &configError{fmt.Errorf("%s has errors (see above)", f.path), diags}}
	}
	return file, diags, nil
}

func termWidth() uint {
	if isatty.IsTerminal(os.Stderr.Fd()) {
		return 100
	}
	return 0
}
