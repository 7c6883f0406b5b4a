package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// provider is the tmpdir sandbox provider. Like the built-in local
// provider it is not a security boundary: commands run as the user running
// sanddune, on this machine. It lists its directories for `sanddune gc`,
// and reattaches to one so that gc can salvage the work in it.
type provider struct{}

var (
	_ sdk.ResourceLister   = provider{}
	_ sdk.SandboxRecoverer = provider{}
)

func newProvider() sdk.SandboxProvider { return provider{} }

// dirs are the sandbox directories, labelled for gc.
var dirs = sandboxkit.TempDirs{Prefix: "sanddune-tmpdir-", LabelsFile: "labels.json"}

func (provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     "0.1.0",
		Description: "example: offline sandbox in a temp dir; not a security boundary",
		Sandbox:     &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated},
	}, nil
}

func (provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "network", Type: cty.String, Description: `Network mode; only "none" is accepted (tmpdir sandboxes are for offline work).`},
		{Name: "allowed_hosts", Type: cty.List(cty.String), Description: "Refused: tmpdir cannot filter network traffic."},
		sandboxkit.EnvAttribute(),
	}}, nil
}

// config is a decoded tmpdir block.
type config struct {
	Network      *string           `cty:"network"`
	AllowedHosts []string          `cty:"allowed_hosts"`
	Env          map[string]string `cty:"env"`
}

// Describe returns the block's env; the host puts it in CreateRequest.Env.
func (provider) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	var c config
	err := cfg.Decode(&c)
	return sdk.SandboxDescription{Env: c.Env}, err
}

// Configure refuses every setting that depends on the network.
func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	var c config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	d := sandboxkit.Decoder{Diags: sdk.CheckEnv(c.Env, "env")}
	network := ""
	if c.Network != nil {
		network = *c.Network
	}
	switch network {
	case "":
	case "none":
		d.Diags = append(d.Diags, sdk.Diagnostic{
			Severity:  sdk.SeverityWarning,
			Summary:   "Network access is not cut off",
			Detail:    `tmpdir runs commands on this machine; network = "none" documents intent but is not enforced.`,
			Attribute: "network",
		})
	default:
		d.Errorf("network", fmt.Sprintf("Unsupported network %q", network),
			`tmpdir sandboxes are for offline work: only network = "none" (or no network attribute) is accepted.`)
	}
	if c.AllowedHosts != nil {
		d.Errorf("allowed_hosts", "allowed_hosts is not supported",
			"tmpdir cannot filter network traffic; use a provider that enforces network policy.")
	}
	return d.Diags, nil
}

func (provider) Preflight(context.Context, sdk.PreflightRequest) error {
	if err := dirs.Check(); err != nil {
		return fmt.Errorf("tmpdir: %w", err)
	}
	return nil
}

func (provider) Create(_ context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	root, err := dirs.Create("", req.Labels)
	if err == nil {
		err = os.Mkdir(filepath.Join(root, "repo"), 0o755)
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(root, "home"), 0o755)
	}
	if err != nil {
		if root != "" {
			_ = sandboxkit.RemoveAll(root)
		}
		return nil, fmt.Errorf("tmpdir: %w", err)
	}
	return &sandbox{root: root, env: req.Env}, nil
}

// ListResources lists the sandbox directories; where they live does not
// depend on the block's config.
func (provider) ListResources(context.Context, sdk.Config) ([]sdk.Resource, error) {
	return dirs.List()
}

func (provider) RemoveResource(_ context.Context, _ sdk.Config, id string) error {
	return dirs.Remove(id)
}

// Recover reattaches to a listed directory; closing it leaves the directory.
func (provider) Recover(_ context.Context, _ sdk.Config, id string) (sdk.Sandbox, error) {
	root, err := dirs.Open(id)
	if err != nil {
		return nil, fmt.Errorf("tmpdir: %w", err)
	}
	return &sandbox{root: root, recovered: true}, nil
}
