package bubblewrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// defaultHide are host credential stores and daemon sockets covered in
// every sandbox (when they exist): the host root is visible read-only, and
// these would hand the agent keys or a root-equivalent socket.
var defaultHide = []string{
	"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube",
	"~/.docker", "~/.netrc", "~/.git-credentials", "/run/docker.sock", "/var/run/docker.sock",
}

func schema() sdk.Schema {
	hide := make([]cty.Value, len(defaultHide))
	for i, h := range defaultHide {
		hide[i] = cty.StringVal(h)
	}
	return sdk.Schema{
		Attributes: []sdk.Attribute{
			{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command in the sandbox."},
			{Name: "network", Type: cty.String, Default: cty.StringVal("host"),
				Description: `"host" shares the host network; "none" gives the sandbox only its own loopback.`},
			{Name: "hide", Type: cty.List(cty.String), Default: cty.ListVal(hide),
				Description: "Host paths hidden from the sandbox (empty dir or file put over them); ~ is the host home."},
		},
		Blocks: []sdk.NestedBlock{{
			TypeName:    "mount",
			Nesting:     sdk.NestingList,
			Description: "Extra host path bound into the sandbox.",
			Body: sdk.Schema{Attributes: []sdk.Attribute{
				{Name: "host_path", Type: cty.String, Required: true, Description: "Host path: absolute, ~/..., or relative to the repository."},
				{Name: "sandbox_path", Type: cty.String, Description: "Path in the sandbox (absolute, or relative to the worktree); default host_path. It must exist, or lie in a writable bind."},
				{Name: "readonly", Type: cty.Bool, Description: "Bind read-only."},
			}},
		}},
	}
}

type config struct {
	Env         map[string]string
	NetworkNone bool
	Hide        []string
	Mounts      []mountConfig
}

type mountConfig struct {
	HostPath, SandboxPath string
	ReadOnly              bool
}

func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d decoder
	v := cfg.Value
	c := config{Env: d.strMap(v, "env"), Hide: defaultHide}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			d.errf("env", "invalid environment variable name", "%q", k)
		}
	}
	switch n := d.str(v, "network"); n {
	case "", "host":
	case "none":
		c.NetworkNone = true
	default:
		d.errf("network", "invalid network", `%q: bubblewrap supports "host" and "none"`, n)
	}
	if h := attr(v, "hide"); !h.IsNull() {
		c.Hide = d.strList(v, "hide")
	}
	for i, h := range c.Hide {
		if h != "~" && !strings.HasPrefix(h, "~/") && !filepath.IsAbs(h) {
			d.errf(fmt.Sprintf("hide.%d", i), "invalid hide path", "%q must be absolute or start with ~/", h)
		}
	}
	if ms := attr(v, "mount"); !ms.IsNull() && ms.CanIterateElements() {
		i := 0
		for it := ms.ElementIterator(); it.Next(); i++ {
			_, m := it.Element()
			md := decoder{prefix: fmt.Sprintf("mount.%d.", i)}
			mc := mountConfig{HostPath: md.str(m, "host_path"), SandboxPath: md.str(m, "sandbox_path"), ReadOnly: md.boolean(m, "readonly")}
			if mc.HostPath == "" {
				md.errf("host_path", "host_path is required", "")
			}
			if p := filepath.Clean(mc.SandboxPath); mc.SandboxPath != "" && !filepath.IsAbs(p) && (p == ".." || strings.HasPrefix(p, "../")) {
				md.errf("sandbox_path", "invalid sandbox_path", "relative path %q leaves the worktree", mc.SandboxPath)
			}
			c.Mounts = append(c.Mounts, mc)
			d.diags = append(d.diags, md.diags...)
		}
	}
	return c, d.diags
}

// expandHome expands a leading ~ to the host user's home.
func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expand %q: %w", p, err)
	}
	return filepath.Join(home, p[1:]), nil
}

// decoder reads attributes of a cty object leniently (missing or null means
// unset) and collects diagnostics; attribute paths start with prefix.
type decoder struct {
	prefix string
	diags  sdk.Diagnostics
}

func (d *decoder) errf(attribute, summary, detail string, args ...any) {
	d.diags = append(d.diags, sdk.Diagnostic{Severity: sdk.SeverityError, Summary: summary,
		Detail: fmt.Sprintf(detail, args...), Attribute: d.prefix + attribute})
}

func attr(v cty.Value, name string) cty.Value {
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

func (d *decoder) conv(v cty.Value, name string, t cty.Type, what string) (cty.Value, bool) {
	a := attr(v, name)
	if a.IsNull() {
		return a, false
	}
	c, err := convert.Convert(a, t)
	if err != nil || c.IsNull() {
		d.errf(name, "invalid "+name, "must be %s", what)
		return c, false
	}
	return c, true
}

func (d *decoder) str(v cty.Value, name string) string {
	if c, ok := d.conv(v, name, cty.String, "a string"); ok {
		return c.AsString()
	}
	return ""
}

func (d *decoder) boolean(v cty.Value, name string) bool {
	if c, ok := d.conv(v, name, cty.Bool, "true or false"); ok {
		return c.True()
	}
	return false
}

func (d *decoder) strList(v cty.Value, name string) []string {
	c, ok := d.conv(v, name, cty.List(cty.String), "a list of strings")
	if !ok {
		return nil
	}
	out := []string{}
	for it := c.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			d.errf(name, "invalid "+name, "list elements must not be null")
			continue
		}
		out = append(out, e.AsString())
	}
	return out
}

func (d *decoder) strMap(v cty.Value, name string) map[string]string {
	c, ok := d.conv(v, name, cty.Map(cty.String), "a map of strings")
	if !ok || c.LengthInt() == 0 {
		return nil
	}
	out := map[string]string{}
	for it := c.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			d.errf(name, "invalid "+name, "value of %q must not be null", k.AsString())
			continue
		}
		out[k.AsString()] = e.AsString()
	}
	return out
}
