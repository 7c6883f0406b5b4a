package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// provider is the tmpdir sandbox provider. Like the built-in local
// provider it is not a security boundary: commands run as the user running
// sanddune, on this machine.
type provider struct{}

func newProvider() sdk.SandboxProvider { return provider{} }

func (provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:             "tmpdir",
		Kind:             sdk.KindSandbox,
		Version:          "0.1.0",
		ProtocolVersions: []int{sdk.ProtocolVersion},
		Description:      "example: offline sandbox in a temp dir; not a security boundary",
		Sandbox:          &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated},
	}, nil
}

func (provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "network", Type: cty.String, Description: `Network mode; only "none" is accepted (tmpdir sandboxes are for offline work).`},
		{Name: "allowed_hosts", Type: cty.List(cty.String), Description: "Refused: tmpdir cannot filter network traffic."},
	}}, nil
}

// Configure refuses every setting that depends on the network.
func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	var ds sdk.Diagnostics
	switch network := stringAttr(cfg, "network"); network {
	case "":
	case "none":
		ds = append(ds, sdk.Diagnostic{
			Severity:  sdk.SeverityWarning,
			Summary:   "Network access is not cut off",
			Detail:    `tmpdir runs commands on this machine; network = "none" documents intent but is not enforced.`,
			Attribute: "network",
		})
	default:
		ds = append(ds, sdk.Diagnostic{
			Summary:   fmt.Sprintf("Unsupported network %q", network),
			Detail:    `tmpdir sandboxes are for offline work: only network = "none" (or no network attribute) is accepted.`,
			Attribute: "network",
		})
	}
	if v := attr(cfg, "allowed_hosts"); !v.IsNull() {
		ds = append(ds, sdk.Diagnostic{
			Summary:   "allowed_hosts is not supported",
			Detail:    "tmpdir cannot filter network traffic; use a provider that enforces network policy.",
			Attribute: "allowed_hosts",
		})
	}
	return ds, nil
}

func (provider) Preflight(context.Context, sdk.PreflightRequest) error {
	dir, err := os.MkdirTemp("", "sanddune-tmpdir-preflight-")
	if err != nil {
		return fmt.Errorf("tmpdir: the temp dir is not writable (set TMPDIR): %w", err)
	}
	return os.Remove(dir)
}

func (provider) Create(_ context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	dir, err := os.MkdirTemp("", "sanddune-tmpdir-")
	if err != nil {
		return nil, fmt.Errorf("tmpdir: %w", err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err == nil {
		err = os.Mkdir(filepath.Join(root, "repo"), 0o755)
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(root, "home"), 0o755)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("tmpdir: %w", err)
	}
	return &sandbox{root: root, env: req.Env}, nil
}

// attr returns a config attribute, or a null value when it is absent.
func attr(cfg sdk.Config, name string) cty.Value {
	v := cfg.Value
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return v.GetAttr(name)
}

func stringAttr(cfg sdk.Config, name string) string {
	v := attr(cfg, name)
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}
