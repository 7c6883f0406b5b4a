package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/missingstudio/sanddune/sdk"
)

func decodeProviders(kind sdk.Kind, blocks []*hcl.Block, seen map[string]hcl.Range) ([]*ProviderBlock, hcl.Diagnostics) {
	var out []*ProviderBlock
	var diags hcl.Diagnostics
	for _, b := range blocks {
		p := &ProviderBlock{
			Kind:        kind,
			Plugin:      b.Labels[0],
			Name:        b.Labels[1],
			Address:     fmt.Sprintf("%s.%s.%s", kind, b.Labels[0], b.Labels[1]),
			DeclRange:   b.DefRange,
			PluginRange: b.LabelRanges[0],
			Body:        b.Body,
		}
		for i, l := range b.Labels {
			if !hclsyntax.ValidIdentifier(l) {
				p.Diags = append(p.Diags, errorDiag(b.LabelRanges[i], fmt.Sprintf("Invalid %s label", b.Type),
					"%q is not a valid name: it must start with a letter and contain only letters, digits, underscores and dashes.", l))
			}
		}
		if prev, dup := seen[p.Address]; dup {
			diags = append(diags, errorDiag(b.DefRange, fmt.Sprintf("Duplicate %s block", kind),
				"%s was already declared at %s.", p.Address, prev))
			continue
		}
		seen[p.Address] = b.DefRange
		out = append(out, p)
	}
	return out, diags
}

// DecodeProvider decodes a provider block's body against its plugin's
// schema (defaults filled in).
func (f *File) DecodeProvider(p *ProviderBlock, schema sdk.Schema) (sdk.Config, hcl.Diagnostics) {
	spec, err := objectSpec(schema)
	if err != nil {
		return sdk.Config{}, hcl.Diagnostics{errorDiag(p.PluginRange, "Invalid plugin schema",
			"The %s plugin %q declares an invalid config schema: %s. This is a bug in the plugin.", p.Kind, p.Plugin, err)}
	}
	val, diags := hcldec.Decode(p.Body, spec, f.evalCtx)
	return sdk.Config{Value: val}, diags
}

// objectSpec converts a plugin schema to the hcldec spec it is decoded with.
func objectSpec(s sdk.Schema) (hcldec.ObjectSpec, error) {
	spec := hcldec.ObjectSpec{}
	for _, a := range s.Attributes {
		if a.Name == "" || a.Type == cty.NilType {
			return nil, fmt.Errorf("attribute %q has no name or type", a.Name)
		}
		if _, dup := spec[a.Name]; dup {
			return nil, fmt.Errorf("%q is declared twice", a.Name)
		}
		var as hcldec.Spec = &hcldec.AttrSpec{Name: a.Name, Type: a.Type, Required: a.Required}
		if !a.Required && a.Default != cty.NilVal && !a.Default.IsNull() {
			def, err := convert.Convert(a.Default, a.Type)
			if err != nil {
				return nil, fmt.Errorf("default of %q does not match its type: %s", a.Name, err)
			}
			as = &hcldec.DefaultSpec{Primary: as, Default: &hcldec.LiteralSpec{Value: def}}
		}
		spec[a.Name] = as
	}
	for _, b := range s.Blocks {
		if _, dup := spec[b.TypeName]; dup || b.TypeName == "" {
			return nil, fmt.Errorf("block %q is unnamed or clashes with another name", b.TypeName)
		}
		nested, err := objectSpec(b.Body)
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", b.TypeName, err)
		}
		switch b.Nesting {
		case sdk.NestingSingle:
			spec[b.TypeName] = &hcldec.BlockSpec{TypeName: b.TypeName, Nested: nested, Required: b.Required}
		case sdk.NestingList:
			minItems := 0
			if b.Required {
				minItems = 1
			}
			if hcldec.ImpliedType(nested).HasDynamicTypes() {
				// Blocks with dynamic attributes may differ in type: a tuple keeps them.
				spec[b.TypeName] = &hcldec.BlockTupleSpec{TypeName: b.TypeName, Nested: nested, MinItems: minItems}
			} else {
				spec[b.TypeName] = &hcldec.BlockListSpec{TypeName: b.TypeName, Nested: nested, MinItems: minItems}
			}
		default:
			return nil, fmt.Errorf("block %q has unknown nesting %d", b.TypeName, b.Nesting)
		}
	}
	return spec, nil
}

// AttrRange returns the source range of an attribute path of the block
// under its plugin's schema, e.g. "network" or "mount.0.host_path", or the
// block's range when the path is empty or not found in the source.
func (p *ProviderBlock) AttrRange(schema sdk.Schema, path string) hcl.Range {
	if path == "" || p.Body == nil {
		return p.DeclRange
	}
	return attributeRange(p.Body, schema, strings.Split(path, "."), p.DeclRange)
}

// attributeRange finds the source range of an attribute path in body, or the
// deepest enclosing block's range (fallback) when the path leaves the source.
func attributeRange(body hcl.Body, schema sdk.Schema, path []string, fallback hcl.Range) hcl.Range {
	for len(path) > 0 {
		content, _, _ := body.PartialContent(bodySchema(schema))
		name := path[0]
		path = path[1:]
		if attr, ok := content.Attributes[name]; ok {
			return exprRange(attr.Expr, path)
		}
		nested, ok := nestedBlock(schema, name)
		if !ok {
			return fallback
		}
		blocks := content.Blocks.OfType(name)
		idx := 0
		if len(path) > 0 {
			if i, err := strconv.Atoi(path[0]); err == nil {
				idx = i
				path = path[1:]
			}
		}
		if idx < 0 || idx >= len(blocks) {
			return fallback
		}
		fallback = blocks[idx].DefRange
		body, schema = blocks[idx].Body, nested.Body
	}
	return fallback
}

// exprRange descends into list and map literals along path.
func exprRange(expr hcl.Expression, path []string) hcl.Range {
	for _, step := range path {
		if i, err := strconv.Atoi(step); err == nil {
			items, diags := hcl.ExprList(expr)
			if diags.HasErrors() || i < 0 || i >= len(items) {
				break
			}
			expr = items[i]
			continue
		}
		pairs, diags := hcl.ExprMap(expr)
		if diags.HasErrors() {
			break
		}
		found := false
		for _, kv := range pairs {
			if k, d := kv.Key.Value(nil); !d.HasErrors() && k.Type() == cty.String && !k.IsNull() && k.AsString() == step {
				expr, found = kv.Value, true
				break
			}
		}
		if !found {
			break
		}
	}
	return expr.Range()
}

func bodySchema(s sdk.Schema) *hcl.BodySchema {
	bs := &hcl.BodySchema{}
	for _, a := range s.Attributes {
		bs.Attributes = append(bs.Attributes, hcl.AttributeSchema{Name: a.Name})
	}
	for _, b := range s.Blocks {
		bs.Blocks = append(bs.Blocks, hcl.BlockHeaderSchema{Type: b.TypeName})
	}
	return bs
}

func nestedBlock(s sdk.Schema, name string) (sdk.NestedBlock, bool) {
	for _, b := range s.Blocks {
		if b.TypeName == name {
			return b, true
		}
	}
	return sdk.NestedBlock{}, false
}

// ParseProviderBody parses src, the body of a `sandbox` or `agent` block
// written in Go (HCL text, or JSON when filename ends in .json), into a
// one-block File: the block to decode with File.DecodeProvider, as a
// provider block of a config file is. Paths in it resolve against the
// working directory.
func ParseProviderBody(kind sdk.Kind, plugin, name string, src []byte, filename string) (*File, *ProviderBlock, hcl.Diagnostics) {
	f := &File{Path: filename, Dir: ".", parser: hclparse.NewParser()}
	if abs, err := filepath.Abs("."); err == nil {
		f.Dir = abs
	}
	f.evalCtx = evalContext(nil, f.Dir)
	hf, diags := f.parse(src, filename)
	b := &ProviderBlock{Kind: kind, Plugin: plugin, Name: name, Address: string(kind) + "." + plugin + "." + name}
	if hf != nil {
		b.Body = hf.Body
		b.DeclRange = hf.Body.MissingItemRange()
		b.PluginRange = b.DeclRange
	}
	return f, b, diags
}
