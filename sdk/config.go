package sdk

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// decodeConfig decodes an object into a struct; attributes the object
// lacks (a partial config, built by hand in a test) decode as null.
func decodeConfig(v cty.Value, target any) error {
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	if ty, err := gocty.ImpliedType(target); err == nil && ty.IsObjectType() && v.Type().IsObjectType() {
		attrs := map[string]cty.Value{}
		for name, at := range ty.AttributeTypes() {
			if v.Type().HasAttribute(name) {
				attrs[name] = v.GetAttr(name)
			} else {
				attrs[name] = cty.NullVal(at)
			}
		}
		v = cty.ObjectVal(attrs)
	}
	return gocty.FromCtyValue(v, target)
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnv reports env keys that are not valid variable names, on
// attribute attrName: every provider's `env` attribute is checked alike.
func CheckEnv(env map[string]string, attrName string) Diagnostics {
	var ds Diagnostics
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !envKey.MatchString(k) {
			ds = append(ds, Diagnostic{
				Summary:   "Invalid environment variable name",
				Detail:    fmt.Sprintf("%q is not a variable name (letters, digits and _, not starting with a digit)", k),
				Attribute: attrName,
			})
		}
	}
	return ds
}
