package sandboxkit

import (
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"strings"

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

// Mount is one decoded `mount` block.
type Mount struct {
	// HostPath is as configured: absolute, ~/..., or relative to the
	// repository (see resolveHostPath and Source).
	HostPath string
	// SandboxPath is as configured; "" when unset.
	SandboxPath string
	ReadOnly    bool
}

// MountBlock describes a provider's `mount` blocks (a list): host_path
// (required), sandbox_path and readonly.
type MountBlock struct {
	// Description is the block's.
	Description string
	// SandboxPath describes sandbox_path: what it may be and what a
	// relative path is relative to.
	SandboxPath string
	// SandboxPathRequired makes sandbox_path required.
	SandboxPathRequired bool
}

// Schema is the block's schema, named "mount".
func (b MountBlock) Schema() sdk.NestedBlock {
	return sdk.NestedBlock{
		TypeName:    "mount",
		Nesting:     sdk.NestingList,
		Description: b.Description,
		Body: sdk.Schema{Attributes: []sdk.Attribute{
			{Name: "host_path", Type: cty.String, Required: true, Description: "Host path: absolute, ~/..., or relative to the repository."},
			{Name: "sandbox_path", Type: cty.String, Required: b.SandboxPathRequired, Description: b.SandboxPath},
			{Name: "readonly", Type: cty.Bool, Description: "Mount read-only."},
		}},
	}
}

// Decode decodes the mount blocks of the provider block v, with
// diagnostics on mount.N.<attribute>: host_path is required, sandbox_path
// too when SandboxPathRequired, and a relative sandbox_path must not leave
// the directory it is relative to.
func (b MountBlock) Decode(d *Decoder, v cty.Value) []Mount {
	ms := Attr(v, "mount")
	if ms.IsNull() || !ms.CanIterateElements() {
		return nil
	}
	var out []Mount
	i := 0
	for it := ms.ElementIterator(); it.Next(); i++ {
		_, m := it.Element()
		md := Decoder{Prefix: fmt.Sprintf("%smount.%d.", d.Prefix, i)}
		mc := Mount{HostPath: md.String(m, "host_path"), SandboxPath: md.String(m, "sandbox_path"), ReadOnly: md.Bool(m, "readonly")}
		if mc.HostPath == "" {
			md.Errorf("host_path", "host_path is required", "")
		}
		switch p := path.Clean(mc.SandboxPath); {
		case mc.SandboxPath == "":
			if b.SandboxPathRequired {
				md.Errorf("sandbox_path", "sandbox_path is required", "")
			}
		case p == ".." || strings.HasPrefix(p, "../"):
			md.Errorf("sandbox_path", "invalid sandbox_path", "relative path %q leaves the directory it is relative to", mc.SandboxPath)
		}
		out = append(out, mc)
		d.Diags = append(d.Diags, md.Diags...)
	}
	return out
}

// Source resolves m.HostPath against the repository (resolveHostPath) and
// checks that it exists.
func (m Mount) Source(repo string) (string, error) {
	src, err := resolveHostPath(m.HostPath, repo)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("host_path %q (resolved to %s) does not exist", m.HostPath, src)
	} else if err != nil {
		return "", fmt.Errorf("host_path %q: %w", m.HostPath, err)
	}
	return src, nil
}

// ExpandHome expands a leading ~ to the home of the user running the
// plugin.
func ExpandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expand %q: %w", p, err)
	}
	return filepath.Join(home, p[1:]), nil
}

// resolveHostPath makes a configured host path absolute and clean: ~ is
// the user's home, relative paths are under the repository repo.
func resolveHostPath(p, repo string) (string, error) {
	p, err := ExpandHome(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		if repo == "" {
			return "", fmt.Errorf("relative host_path %q needs a repository", p)
		}
		p = filepath.Join(repo, p)
	}
	return filepath.Clean(p), nil
}
