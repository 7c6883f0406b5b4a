package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/missingstudio/sanddune/core/internal/textfile"
)

// EnvVarPrefix prefixes environment variables that set config variables.
const EnvVarPrefix = "SANDDUNE_VAR_"

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "default"}, {Name: "description"}, {Name: "type"}},
}

func decodeVariables(blocks []*hcl.Block, vars map[string]string, env []string) ([]*Variable, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	envVals := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, EnvVarPrefix) {
			envVals[strings.TrimPrefix(k, EnvVarPrefix)] = v
		}
	}

	var out []*Variable
	declared := map[string]hcl.Range{}
	for _, b := range blocks {
		name := b.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Invalid variable name",
				"A variable name must start with a letter and contain only letters, digits, underscores and dashes."))
			continue
		}
		if prev, dup := declared[name]; dup {
			diags = append(diags, errorDiag(b.DefRange, "Duplicate variable block",
				"Variable %q was already declared at %s.", name, prev))
			continue
		}
		declared[name] = b.DefRange
		v, moreDiags := decodeVariable(b, name)
		diags = append(diags, moreDiags...)

		raw, set := vars[name]
		source := "--var"
		if !set {
			raw, set = envVals[name]
			source = EnvVarPrefix + name
		}
		switch {
		case set:
			val, err := parseVariableValue(raw, v.Type)
			if err != nil {
				diags = append(diags, errorDiag(b.DefRange, "Invalid value for variable",
					"The value of variable %q from %s is not a valid %s: %s.", name, source, typeexpr.TypeString(v.Type), err))
				val = cty.DynamicVal
			}
			v.Value = val
		case v.Value == cty.NilVal:
			diags = append(diags, errorDiag(b.DefRange, "Missing value for variable",
				"Variable %q has no default. Set it with --var %s=VALUE or the %s%s environment variable.", name, name, EnvVarPrefix, name))
			v.Value = cty.DynamicVal
		}
		out = append(out, v)
	}

	var undeclared []string
	for k := range vars {
		if _, ok := declared[k]; !ok {
			undeclared = append(undeclared, k)
		}
	}
	sort.Strings(undeclared)
	for _, k := range undeclared {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Value for undeclared variable",
			Detail:   fmt.Sprintf("--var sets %q, but the config declares no variable %q.", k, k),
		})
	}
	return out, diags
}

// decodeVariable decodes a variable block; Value is cty.NilVal when it has no
// default.
func decodeVariable(b *hcl.Block, name string) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: name, Type: cty.DynamicPseudoType, Value: cty.NilVal, DeclRange: b.DefRange}
	content, diags := b.Body.Content(variableSchema)
	if attr, ok := content.Attributes["description"]; ok {
		diags = append(diags, gohcl.DecodeExpression(attr.Expr, nil, &v.Description)...)
	}
	if attr, ok := content.Attributes["type"]; ok {
		ty, moreDiags := typeexpr.TypeConstraint(attr.Expr)
		diags = append(diags, moreDiags...)
		if !moreDiags.HasErrors() {
			v.Type = ty
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		val, moreDiags := attr.Expr.Value(nil)
		diags = append(diags, moreDiags...)
		if moreDiags.HasErrors() {
			v.Value = cty.DynamicVal
			return v, diags
		}
		conv, err := convert.Convert(val, v.Type)
		if err != nil {
			diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid default value for variable",
				"The default of variable %q is not a valid %s: %s.", name, typeexpr.TypeString(v.Type), err))
			conv = cty.DynamicVal
		}
		v.Value = conv
	}
	return v, diags
}

// parseVariableValue turns a --var or env string into a value of ty: the
// string itself for string (or unconstrained) variables, else an HCL
// expression such as `5`, `true` or `["a", "b"]`.
func parseVariableValue(raw string, ty cty.Type) (cty.Value, error) {
	if ty == cty.String || ty == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	shown := raw
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	notLiteral := fmt.Errorf("%q is not an HCL value of that type (such as 42, true, [\"a\"] or {k = \"v\"})", shown)
	if diags := CheckSource([]byte(raw), "<value>"); diags.HasErrors() {
		return cty.NilVal, errors.New(diags[0].Summary + ": " + strings.TrimSuffix(diags[0].Detail, "."))
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "<value>", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, notLiteral
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, notLiteral
	}
	return convert.Convert(val, ty)
}

// evalContext exposes var.<name>, path.config and file(path) to
// expressions.
func evalContext(vars []*Variable, dir string) *hcl.EvalContext {
	vals := map[string]cty.Value{}
	for _, v := range vars {
		vals[v.Name] = v.Value
	}
	return &hcl.EvalContext{Variables: map[string]cty.Value{
		"var":  cty.ObjectVal(vals),
		"path": cty.ObjectVal(map[string]cty.Value{"config": cty.StringVal(dir)}),
	}, Functions: map[string]function.Function{"file": fileFunc(dir)}}
}

// fileFunc is file(path): the UTF-8 text of a regular file of at most
// MaxConfigSize bytes, relative paths against the config file's
// directory.
func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Description: "The text of a file; relative paths are against the config file's directory.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			path := args[0].AsString()
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			data, err := textfile.Read(path, MaxConfigSize)
			if err != nil {
				return cty.NilVal, err
			}
			if !utf8.Valid(data) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text", path)
			}
			return cty.StringVal(string(data)), nil
		},
	})
}
