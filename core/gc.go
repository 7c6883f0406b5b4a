package core

import (
	"context"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/core/pluginhost"
)

// GCProviders returns what `sanddune gc` collects through for the sandbox
// blocks of a config file: each block's plugin, resolved through plugins,
// with the block decoded against the plugin's schema and checked by it,
// as for a run. Blocks of the same plugin with the same config are one
// gc.Provider. A block that cannot be used is left out, and the
// diagnostics say why.
func GCProviders(ctx context.Context, f *config.File, plugins *pluginhost.Host) ([]gc.Provider, Diagnostics) {
	var out []gc.Provider
	var diags Diagnostics
	ps := planning.Providers{File: f, Plugins: plugins}
	for _, b := range f.Sandboxes {
		sb, ds := ps.Sandbox(ctx, b)
		diags = append(diags, ds...)
		if sb == nil {
			continue
		}
		p := gc.Provider{Name: b.Plugin, Provider: sb.Provider, Config: sb.Config, Block: b.Address}
		if !sameGCProvider(out, p) {
			out = append(out, p)
		}
	}
	return out, diags
}

func sameGCProvider(ps []gc.Provider, p gc.Provider) bool {
	for _, q := range ps {
		if q.Name == p.Name && q.Config.Value.RawEquals(p.Config.Value) {
			return true
		}
	}
	return false
}
