package planning

import (
	"context"
	"errors"
	"fmt"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/env"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/suggest"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Plugins dispenses providers by plugin name: the plugin host
// (*pluginhost.Host).
type Plugins interface {
	Sandbox(ctx context.Context, plugin string) (sdk.SandboxProvider, pluginhost.Component, error)
	Agent(ctx context.Context, plugin string) (sdk.AgentProvider, pluginhost.Component, error)
}

// Sandbox is a sandbox block resolved, decoded, configured and described.
type Sandbox struct {
	Provider sdk.SandboxProvider
	Config   sdk.Config
	Caps     sdk.SandboxCapabilities
	Desc     sdk.SandboxDescription
	// Restart resolves the provider again, relaunching its plugin when
	// it died (the teardown of a run cleans up through it).
	Restart func(context.Context) (sdk.SandboxProvider, error)
	// Egress is the block's egress policy, checked.
	Egress *run.Egress
}

// Agent is an agent block resolved, decoded, configured and described.
type Agent struct {
	Provider sdk.AgentProvider
	Config   sdk.Config
	Desc     sdk.AgentDescription
}

// Providers plans the provider blocks of one config file.
type Providers struct {
	File    *config.File
	Plugins Plugins
}

// Sandbox resolves, decodes, configures and describes a sandbox block; nil
// when it cannot be used.
func (p Providers) Sandbox(ctx context.Context, b *config.ProviderBlock) (*Sandbox, Diagnostics) {
	prov, comp, cfg, diags := configure(ctx, p, b, p.Plugins.Sandbox)
	var eg *run.Egress
	if b.Egress != nil {
		diags = append(diags, config.FromHCL(b.Address, b.Egress.Diags)...)
		eg = egressOf(b.Egress)
	}
	if diags.HasErrors() {
		if eg != nil { // the entries, whatever the provider or the block's other attributes
			diags = append(diags, located(CheckEgress(b.Address, b.Plugin, eg, sdk.SandboxCapabilities{Egress: true}, sdk.Config{}, nil), b)...)
		}
		return nil, diags
	}
	if comp.Info.Sandbox == nil {
		return nil, append(diags, Diagnostic{Severity: Error, Block: b.Address, Subject: b.PluginRange.Ptr(),
			Summary: "Plugin declares no sandbox capabilities", Detail: fmt.Sprintf("%s (%s) is not usable as a sandbox provider; this is a bug in the plugin.", b.Plugin, comp.Source)})
	}
	desc, err := prov.Describe(ctx, cfg)
	if err != nil {
		return nil, append(diags, Diagnostic{Severity: Error, Block: b.Address, Subject: b.DeclRange.Ptr(), Err: err,
			Summary: "Plugin failed to describe the sandbox", Detail: fmt.Sprintf("%s (%s): %v", b.Address, comp.Source, err)})
	}
	// The runs using a block whose policy is wrong are still checked: their
	// own problems are reported in the same pass.
	diags = append(diags, located(CheckEgress(b.Address, b.Plugin, eg, *comp.Info.Sandbox, cfg, desc.EgressConflicts), b)...)
	restart := func(ctx context.Context) (sdk.SandboxProvider, error) {
		prov, _, err := p.Plugins.Sandbox(ctx, b.Plugin)
		return prov, err
	}
	return &Sandbox{Provider: prov, Config: cfg, Caps: *comp.Info.Sandbox, Desc: desc, Restart: restart, Egress: eg}, diags
}

// Agent resolves, decodes, configures and describes an agent block; nil
// when it cannot be used.
func (p Providers) Agent(ctx context.Context, b *config.ProviderBlock) (*Agent, Diagnostics) {
	prov, comp, cfg, diags := configure(ctx, p, b, p.Plugins.Agent)
	if diags.HasErrors() {
		return nil, diags
	}
	desc, err := prov.Describe(ctx, cfg)
	if err != nil {
		return nil, append(diags, Diagnostic{Severity: Error, Block: b.Address, Subject: b.DeclRange.Ptr(), Err: err,
			Summary: "Plugin failed to describe the agent", Detail: fmt.Sprintf("%s (%s): %v", b.Address, comp.Source, err)})
	}
	return &Agent{Provider: prov, Config: cfg, Desc: desc}, diags
}

// configurer is what sandbox and agent providers share for configuration.
type configurer interface {
	ConfigSchema(ctx context.Context) (sdk.Schema, error)
	Configure(ctx context.Context, cfg sdk.Config) (sdk.Diagnostics, error)
}

// configure resolves a block's plugin, decodes the block against the
// plugin's schema and hands it to the plugin to check.
func configure[P configurer](ctx context.Context, p Providers, b *config.ProviderBlock,
	resolve func(context.Context, string) (P, pluginhost.Component, error)) (prov P, comp pluginhost.Component, cfg sdk.Config, diags Diagnostics) {
	if diags = config.FromHCL(b.Address, b.Diags); diags.HasErrors() {
		return prov, comp, cfg, diags
	}
	prov, comp, err := resolve(ctx, b.Plugin)
	if err != nil {
		return prov, comp, cfg, append(diags, pluginDiag(b, err))
	}
	cfg, ds := Decode(ctx, p.File, b, prov, comp.Source.String())
	return prov, comp, cfg, append(diags, ds...)
}

// Decode decodes provider block b of f against prov's schema and has prov
// check it; source names the plugin in errors.
func Decode(ctx context.Context, f *config.File, b *config.ProviderBlock, prov configurer, source string) (sdk.Config, Diagnostics) {
	failed := func(summary string, err error) Diagnostics {
		return Diagnostics{{Severity: Error, Block: b.Address, Subject: b.DeclRange.Ptr(), Err: err,
			Summary: summary, Detail: fmt.Sprintf("%s (%s): %v", b.Address, source, err)}}
	}
	schema, err := prov.ConfigSchema(ctx)
	if err != nil {
		return sdk.Config{}, failed("Plugin failed to give its config schema", err)
	}
	cfg, hd := f.DecodeProvider(b, schema)
	diags := config.FromHCL(b.Address, hd)
	if diags.HasErrors() {
		return cfg, diags
	}
	ds, err := prov.Configure(ctx, cfg)
	if err != nil {
		return cfg, append(diags, failed("Plugin failed to check its config", err)...)
	}
	for _, d := range ds {
		sev := Error
		if d.Severity == sdk.SeverityWarning {
			sev = Warning
		}
		rng := b.AttrRange(schema, d.Attribute)
		diags = append(diags, Diagnostic{Severity: sev, Block: b.Address, Attribute: d.Attribute, Summary: d.Summary, Detail: d.Detail, Subject: &rng})
	}
	return cfg, diags
}

func pluginDiag(b *config.ProviderBlock, err error) Diagnostic {
	d := Diagnostic{Severity: Error, Block: b.Address, Subject: b.PluginRange.Ptr(), Err: err,
		Summary: fmt.Sprintf("Failed to load %s plugin %q", b.Kind, b.Plugin), Detail: err.Error()}
	var nf *pluginhost.NotFoundError
	if errors.As(err, &nf) {
		didYouMean := ""
		if s := suggest.Closest(b.Plugin, nf.KnownPlugins()); s != "" {
			didYouMean = fmt.Sprintf("Did you mean %q? ", s)
		}
		d.Summary = fmt.Sprintf("Unknown %s plugin %q", b.Kind, b.Plugin)
		d.Detail = fmt.Sprintf("%sNo %s plugin named %q is installed. Install an executable named sanddune-plugin-%s in a directory listed in SANDDUNE_PLUGIN_PATH, "+
			"in .sanddune/plugins/ of the repository (then trust it: `sanddune plugins lock`), in $XDG_DATA_HOME/sanddune/plugins or next to the sanddune executable. "+
			"`sanddune plugins list` shows the plugins found.", didYouMean, b.Kind, b.Plugin, b.Plugin)
	}
	return d
}

// Repo is what the runs in one repository share; Repo is nil when the
// directory cannot be used, and Err says why.
type Repo struct {
	Repo       *worktree.Repo
	HostBranch string // "" when detached
	DotEnv     map[string]string
	Err        Diagnostic
}

// repoError is a repository's problem: every run in the repository has
// it, and once reports it once.
type repoError struct{ error }

func (e *repoError) Unwrap() error { return e.error }

// once drops the repeats of a repository's problem (one diagnostic per
// run in it), keeping the first error among them, else the first.
func once(ds Diagnostics) Diagnostics {
	var out Diagnostics
	at := map[*repoError]int{}
	for _, d := range ds {
		re, ok := d.Err.(*repoError)
		if !ok {
			out = append(out, d)
			continue
		}
		if i, seen := at[re]; seen {
			if out[i].Severity != Error && d.Severity == Error {
				out[i] = d
			}
			continue
		}
		at[re] = len(out)
		out = append(out, d)
	}
	return out
}

// Repos opens each repository once.
type Repos map[string]*Repo

// Open returns the repository containing dir.
func (rs Repos) Open(ctx context.Context, dir string) *Repo {
	if s, ok := rs[dir]; ok {
		return s
	}
	s := &Repo{}
	rs[dir] = s
	fail := func(attr, summary string, err error) *Repo {
		s.Repo, s.Err = nil, Diagnostic{Severity: Error, Attribute: attr, Summary: summary, Detail: err.Error(), Err: &repoError{err}}
		return s
	}
	var err error
	switch s.Repo, _, s.HostBranch, err = worktree.OpenCheckout(ctx, dir); {
	case errors.Is(err, worktree.ErrGitMissing):
		return fail("repo", "Git is missing", err)
	case errors.Is(err, worktree.ErrNoCommits):
		return fail("repo", "Repository without commits", fmt.Errorf("the repository %s has no commits yet: make a first commit, then run again", s.Repo.Root))
	case err != nil:
		return fail("repo", "Not a git repository", fmt.Errorf("%w (run sanddune inside a git repository, or set repo)", err))
	}
	if s.DotEnv, err = env.ReadFile(s.Repo.StateDir(".env")); err != nil {
		return fail("env", "Invalid .sanddune/.env", err)
	}
	return s
}
