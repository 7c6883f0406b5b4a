package mounts

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

func TestBlockDecode(t *testing.T) {
	t.Parallel()
	mb := Block{SandboxPathRequired: true}
	mount := func(host, sandbox string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"host_path": cty.StringVal(host), "sandbox_path": cty.StringVal(sandbox), "readonly": cty.True})
	}
	v := cty.ObjectVal(map[string]cty.Value{
		"mount": cty.ListVal([]cty.Value{mount("~/x", "/x"), mount("", "../up"), mount("y", "")}),
	})
	var d sandboxkit.Decoder
	ms := mb.Decode(&d, v)
	if len(ms) != 3 || ms[0] != (Mount{"~/x", "/x", true}) {
		t.Errorf("decoded mounts %+v", ms)
	}
	var got []string
	for _, diag := range d.Diags {
		got = append(got, diag.Attribute)
	}
	if want := "mount.1.host_path mount.1.sandbox_path mount.2.sandbox_path"; strings.Join(got, " ") != want {
		t.Errorf("diagnostics on %q, want %q", got, want)
	}
	if s := mb.Schema(); s.TypeName != "mount" || !s.Body.Attributes[1].Required {
		t.Errorf("schema %+v", s)
	}
}

func TestResolveHostPathMakesConfiguredPathsAbsolute(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for p, want := range map[string]string{"~": "/home/u", "~/a/../b": "/home/u/b", "/abs/": "/abs", "rel": "/repo/rel"} {
		if got, err := resolveHostPath(p, "/repo"); err != nil || got != want {
			t.Errorf("resolveHostPath(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := resolveHostPath("rel", ""); err == nil {
		t.Error("relative path without a repository accepted")
	}
	dir := t.TempDir()
	if src, err := (Mount{HostPath: dir}).Source(""); err != nil || src != dir {
		t.Errorf("Source: %q %v", src, err)
	}
	if _, err := (Mount{HostPath: "missing"}).Source(dir); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing source: %v", err)
	}
}
