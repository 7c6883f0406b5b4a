package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/prompt"
	"github.com/missingstudio/sanddune/core/session"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
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

// loaded is a config file whose provider blocks the plugins accepted.
type loaded struct {
	file *config.File
	host *pluginhost.Host
}

// loadConfig parses and validates a config file: HCL decoding against the
// plugins' schemas, then every provider block through its plugin's
// Configure, then capability checks. Diagnostics are printed on stderr; any
// error among them is a usage error (exit 2). The caller closes l.host.
func loadConfig(ctx context.Context, g *globals, f *configFlags) (*loaded, error) {
	vars, err := f.varMap()
	if err != nil {
		return nil, err
	}
	f.path = findDefaultConfig(ctx, f.path)
	if _, err := os.Stat(f.path); err != nil {
		hint := ""
		if f.path == DefaultConfigPath {
			hint = " (create one, or pass -c FILE; the README's quick start has an example)"
		}
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("config file %s: %w%s", f.path, errors.Unwrap(err), hint)}
	}
	abs, _ := filepath.Abs(f.path)
	host := g.newHost(filepath.Dir(abs))
	file, diags := config.Load(ctx, f.path, vars, os.Environ(), schemaSource{host})
	if !diags.HasErrors() {
		diags = append(diags, configure(ctx, file, host, f.repo)...)
	}
	if len(diags) > 0 {
		file.WriteDiagnostics(os.Stderr, diags, termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
	}
	if diags.HasErrors() {
		host.Close()
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s has errors (see above)", f.path)}
	}
	return &loaded{file: file, host: host}, nil
}

// configure hands each provider block to its plugin and checks that every
// run asks only for what its sandbox provider can do.
func configure(ctx context.Context, file *config.File, host *pluginhost.Host, repo string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, blocks := range [][]*config.ProviderBlock{file.Sandboxes, file.Agents} {
		for _, b := range blocks {
			c, err := host.Resolve(ctx, b.Kind, b.Plugin)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin failed", Detail: err.Error(), Subject: b.PluginRange.Ptr()})
				continue
			}
			var ds sdk.Diagnostics
			switch p := c.Provider.(type) {
			case sdk.SandboxProvider:
				ds, err = p.Configure(ctx, b.Config)
			case sdk.AgentProvider:
				ds, err = p.Configure(ctx, b.Config)
			}
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plugin failed to check its config", Detail: fmt.Sprintf("%s (%s): %v", b.Address, c.Source, err), Subject: b.DeclRange.Ptr()})
				continue
			}
			diags = append(diags, b.MapDiagnostics(ds)...)
		}
	}
	if diags.HasErrors() {
		return diags
	}
	for _, r := range file.Runs {
		diags = append(diags, checkRun(ctx, host, r, repo)...)
		diags = append(diags, checkResume(ctx, host, r)...)
		caps := r.Sandbox.Info.Sandbox
		if caps == nil || caps.Sudo {
			continue
		}
		for _, h := range r.Options.Hooks.SandboxOnSandboxReady {
			if h.Sudo {
				rng := r.AttrRange("hooks")
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Sandbox cannot run hooks with sudo",
					Detail:   fmt.Sprintf("Run %q has a sandbox hook with sudo = true, but %s cannot run commands as root. Remove sudo, or use a sandbox provider that supports it (e.g. docker).", r.Label, r.Sandbox.Address),
					Subject:  &rng,
				})
				break
			}
		}
	}
	return diags
}

// schemaSource serves plugin schemas to the config loader.
type schemaSource struct{ host *pluginhost.Host }

func (s schemaSource) Schema(ctx context.Context, kind sdk.Kind, plugin string) (sdk.Schema, sdk.Info, error) {
	c, err := s.host.Resolve(ctx, kind, plugin)
	if err != nil {
		var nf *pluginhost.NotFoundError
		if errors.As(err, &nf) {
			return sdk.Schema{}, sdk.Info{}, fmt.Errorf("%w: %w", config.ErrUnknownPlugin, err)
		}
		return sdk.Schema{}, sdk.Info{}, err
	}
	schema, err := c.Provider.ConfigSchema(ctx)
	if err != nil {
		return sdk.Schema{}, sdk.Info{}, fmt.Errorf("plugin %q (%s): %w", plugin, c.Source, err)
	}
	return schema, c.Info, nil
}

func termWidth() uint {
	if isatty.IsTerminal(os.Stderr.Fd()) {
		return 100
	}
	return 0
}

// checkResume refuses resume_session (or fork_session) for an agent that
// cannot resume (or fork) sessions.
func checkResume(ctx context.Context, host *pluginhost.Host, r *config.RunBlock) hcl.Diagnostics {
	if r.Options.ResumeSession == "" || r.Agent == nil {
		return nil
	}
	c, err := host.Resolve(ctx, sdk.KindAgent, r.Agent.Plugin)
	if err != nil {
		return nil // reported with the agent block
	}
	desc, err := c.Provider.(sdk.AgentProvider).Describe(ctx, r.Agent.Config)
	if err == nil {
		err = session.CheckResume(desc, r.Options.ForkSession)
	}
	if err == nil {
		return nil
	}
	rng := r.AttrRange("resume_session")
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Cannot resume a session with this agent",
		Detail:   fmt.Sprintf("Run %q: %s (%s): %v.", r.Label, r.Agent.Address, c.Source, err),
		Subject:  &rng,
	}}
}

// checkRun makes the engine's own pre-start checks (prompt template and its
// arguments, branch strategy, env layers, credentials) and reports a
// failure as a diagnostic on the run block.
func checkRun(ctx context.Context, host *pluginhost.Host, r *config.RunBlock, repo string) hcl.Diagnostics {
	o := r.Options
	var err error
	if o.Sandbox.Provider, err = resolve(ctx, host, r.Sandbox); err != nil {
		return nil // reported with the provider block
	}
	if o.Agent.Provider, err = resolve(ctx, host, r.Agent); err != nil {
		return nil
	}
	if repo != "" {
		o.Repo = repo
	}
	err = core.Check(ctx, o)
	if err == nil {
		return nil
	}
	attr := ""
	var pe *worktree.PlanError
	var prErr *prompt.Error
	switch {
	case errors.As(err, &pe):
		attr = strings.SplitN(pe.Attribute, ".", 2)[0]
	case errors.As(err, &prErr):
		attr = "prompt_file"
	}
	rng := r.DeclRange
	if attr != "" {
		rng = r.AttrRange(attr)
	}
	detail := err.Error()
	var re *core.RunError
	if errors.As(err, &re) {
		detail = re.Err.Error()
		if re.Hint != "" {
			detail += " (" + re.Hint + ")"
		}
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Run %q cannot start", r.Label),
		Detail:   detail,
		Subject:  &rng,
	}}
}

func resolve(ctx context.Context, host *pluginhost.Host, b *config.ProviderBlock) (sdk.Provider, error) {
	if b == nil {
		return nil, errors.New("no provider block")
	}
	c, err := host.Resolve(ctx, b.Kind, b.Plugin)
	return c.Provider, err
}
