package sandboxkit

import (
	"fmt"
	"math/big"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/missingstudio/sanddune/sdk"
)

// Decoder reads the attributes of a provider block (a cty object or map)
// leniently: a missing, null or unknown attribute is unset, so partial
// objects work too. A value of the wrong type adds an error diagnostic.
type Decoder struct {
	// Prefix starts the attribute path of every diagnostic, e.g. "mount.0.".
	Prefix string
	Diags  sdk.Diagnostics
}

// Errorf adds an error diagnostic on attribute; detail is a format.
func (d *Decoder) Errorf(attribute, summary, detail string, args ...any) {
	d.Diags = append(d.Diags, sdk.Diagnostic{
		Severity:  sdk.SeverityError,
		Summary:   summary,
		Detail:    fmt.Sprintf(detail, args...),
		Attribute: d.Prefix + attribute,
	})
}

// Attr returns an attribute of an object or map value, or a null value when
// it is absent or unknown.
func Attr(v cty.Value, name string) cty.Value {
	null := cty.NullVal(cty.DynamicPseudoType)
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
		return null
	}
	t := v.Type()
	switch {
	case t.IsObjectType() && t.HasAttribute(name):
		v = v.GetAttr(name)
	case t.IsMapType() && v.HasIndex(cty.StringVal(name)).True():
		v = v.Index(cty.StringVal(name))
	default:
		return null
	}
	if !v.IsKnown() {
		return null
	}
	return v
}

func (d *Decoder) conv(v cty.Value, name string, t cty.Type, what string) (cty.Value, bool) {
	a := Attr(v, name)
	if a.IsNull() {
		return a, false
	}
	c, err := convert.Convert(a, t)
	if err != nil || c.IsNull() {
		d.Errorf(name, "invalid "+name, "must be %s", what)
		return c, false
	}
	return c, true
}

// String returns a string attribute, or "".
func (d *Decoder) String(v cty.Value, name string) string {
	if c, ok := d.conv(v, name, cty.String, "a string"); ok {
		return c.AsString()
	}
	return ""
}

// Bool returns a bool attribute, or false.
func (d *Decoder) Bool(v cty.Value, name string) bool {
	if c, ok := d.conv(v, name, cty.Bool, "true or false"); ok {
		return c.True()
	}
	return false
}

// Number returns a number attribute and whether it is set.
func (d *Decoder) Number(v cty.Value, name string) (*big.Float, bool) {
	if c, ok := d.conv(v, name, cty.Number, "a number"); ok {
		return c.AsBigFloat(), true
	}
	return nil, false
}

// Int returns a whole-number attribute and whether it is set.
func (d *Decoder) Int(v cty.Value, name string) (int64, bool) {
	f, ok := d.Number(v, name)
	if !ok {
		return 0, false
	}
	n, acc := f.Int64()
	if acc != big.Exact {
		d.Errorf(name, "invalid "+name, "must be a whole number")
		return 0, false
	}
	return n, true
}

// StringList returns a list-of-strings attribute; nil when unset or empty.
func (d *Decoder) StringList(v cty.Value, name string) []string {
	c, ok := d.conv(v, name, cty.List(cty.String), "a list of strings")
	if !ok || c.LengthInt() == 0 {
		return nil
	}
	var out []string
	for it := c.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			d.Errorf(name, "invalid "+name, "list elements must not be null")
			continue
		}
		out = append(out, e.AsString())
	}
	return out
}

// StringMap returns a map-of-strings attribute; nil when unset or empty.
func (d *Decoder) StringMap(v cty.Value, name string) map[string]string {
	c, ok := d.conv(v, name, cty.Map(cty.String), "a map of strings")
	if !ok || c.LengthInt() == 0 {
		return nil
	}
	out := map[string]string{}
	for it := c.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			d.Errorf(name, "invalid "+name, "value of %q must not be null", k.AsString())
			continue
		}
		out[k.AsString()] = e.AsString()
	}
	return out
}

// Env returns an environment map attribute and checks the variable names.
func (d *Decoder) Env(v cty.Value, name string) map[string]string {
	env := d.StringMap(v, name)
	d.Diags = append(d.Diags, sdk.CheckEnv(env, d.Prefix+name)...)
	return env
}
