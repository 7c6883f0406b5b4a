package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// RequiredPlugin is one entry of the required_plugins block:
//
//	required_plugins {
//	  tmpdir = { source = "./bin/sanddune-plugin-tmpdir", version = ">= 1.2" }
//	}
type RequiredPlugin struct {
	Name string
	// Source is the plugin binary asked for (absolute: a relative source
	// resolves against the config's directory), or "" for the usual search.
	// Only a source makes a binary replace a built-in.
	Source string
	// Version constrains the plugin's version; nil allows any.
	Version   version.Constraints
	DeclRange hcl.Range
}

// decodeRequiredPlugins decodes the required_plugins blocks (at most one).
func decodeRequiredPlugins(blocks []*hcl.Block, ctx *hcl.EvalContext, dir string) ([]*RequiredPlugin, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	for _, extra := range blocks[min(1, len(blocks)):] {
		diags = append(diags, errorDiag(extra.DefRange, "Duplicate required_plugins block",
			"A config has one required_plugins block; the first is at %s.", blocks[0].DefRange))
	}
	if len(blocks) == 0 {
		return nil, diags
	}
	attrs, ds := blocks[0].Body.JustAttributes()
	diags = append(diags, ds...)
	var out []*RequiredPlugin
	for _, a := range attrs {
		if !hclsyntax.ValidIdentifier(a.Name) {
			diags = append(diags, errorDiag(a.NameRange, "Invalid plugin name", "%q is not a valid plugin name.", a.Name))
			continue
		}
		r, ds := decodeRequiredPlugin(a, ctx, dir)
		diags = append(diags, ds...)
		if r != nil {
			out = append(out, r)
		}
	}
	return out, diags
}

func decodeRequiredPlugin(a *hcl.Attribute, ctx *hcl.EvalContext, dir string) (*RequiredPlugin, hcl.Diagnostics) {
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return nil, diags
	}
	rng := a.Expr.Range()
	if v.IsNull() || !v.Type().IsObjectType() {
		return nil, hcl.Diagnostics{errorDiag(rng, "Invalid required plugin",
			`Want an object such as { source = "./bin/sanddune-plugin-%s", version = ">= 1.2" }.`, a.Name)}
	}
	r := &RequiredPlugin{Name: a.Name, DeclRange: a.Range}
	for name := range v.Type().AttributeTypes() {
		if name != "source" && name != "version" {
			return nil, hcl.Diagnostics{errorDiag(rng, "Unsupported argument",
				"%q is not an argument of a required plugin: it takes source and version.", name)}
		}
	}
	str := func(attr string) (string, *hcl.Diagnostic) {
		if !v.Type().HasAttribute(attr) {
			return "", nil
		}
		s := v.GetAttr(attr)
		if s.IsNull() || !s.IsKnown() || s.Type() != cty.String {
			return "", errorDiag(rng, "Invalid required plugin", "%s of plugin %q must be a string.", attr, a.Name)
		}
		return s.AsString(), nil
	}
	src, d := str("source")
	if d != nil {
		return nil, hcl.Diagnostics{d}
	}
	if src != "" {
		if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") && !filepath.IsAbs(src) {
			return nil, hcl.Diagnostics{errorDiag(rng, "Invalid plugin source",
				"source %q must be the path of a plugin binary (starting with ./, ../ or /, relative to the config's directory): sanddune has no plugin registry.", src)}
		}
		if !filepath.IsAbs(src) {
			src = filepath.Join(dir, src)
		}
		r.Source = filepath.Clean(src)
	}
	ver, d := str("version")
	if d != nil {
		return nil, hcl.Diagnostics{d}
	}
	if ver != "" {
		c, err := version.NewConstraint(ver)
		if err != nil {
			return nil, hcl.Diagnostics{errorDiag(rng, "Invalid version constraint",
				"version %q of plugin %q: %v (e.g. \">= 1.2\", \"~> 1.2.0\").", ver, a.Name, err)}
		}
		r.Version = c
	}
	if r.Source == "" && r.Version == nil {
		return nil, hcl.Diagnostics{errorDiag(rng, "Invalid required plugin", "Plugin %q needs a source, a version, or both.", a.Name)}
	}
	return r, nil
}

// Decl is where the requirement is declared, for messages.
func (r *RequiredPlugin) Decl() string {
	return fmt.Sprintf("%s:%d", r.DeclRange.Filename, r.DeclRange.Start.Line)
}
