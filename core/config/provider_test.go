package config

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

func TestFakeProviderTypoSuggestsName(t *testing.T) {
	t.Parallel()
	f, diags := load(t, `sandbox "fakebox" "dev" {
  image   = "debian"
  netwrok = "none"
}
`)
	d := wantError(t, f, diags, "Unsupported argument")
	wantAt(t, d, "sanddune.hcl", 3, 3)
	if !strings.Contains(d.Detail, `"netwrok"`) || !strings.Contains(d.Detail, `Did you mean "network"?`) {
		t.Fatalf("detail %q lacks the name or the suggestion", d.Detail)
	}
	out := render(t, f, diags)
	for _, want := range []string{"sanddune.hcl line 3", `netwrok = "none"`, `Did you mean "network"?`} {
		if !strings.Contains(out, want) {
			t.Fatalf("rendered diagnostics lack %q:\n%s", want, out)
		}
	}
}

func TestFakeProviderWrongType(t *testing.T) {
	t.Parallel()
	f, diags := load(t, `sandbox "fakebox" "dev" {
  image = "debian"
  cpus  = "many"
}
`)
	d := wantError(t, f, diags, "Incorrect attribute value type")
	wantAt(t, d, "sanddune.hcl", 3, 11)
	if !strings.Contains(d.Detail, `"cpus"`) {
		t.Fatalf("detail %q does not name cpus", d.Detail)
	}
}

func TestFakeProviderMissingRequired(t *testing.T) {
	t.Parallel()
	f, diags := load(t, `sandbox "fakebox" "dev" {
  mount {
    sandbox_path = "/x"
  }
}
`)
	if !strings.Contains(wantError(t, f, diags, "Missing required argument").Detail, `"image"`) {
		t.Fatal("missing image not named")
	}
	var hostPath bool
	for _, d := range diags {
		hostPath = hostPath || strings.Contains(d.Detail, `"host_path"`)
	}
	if !hostPath {
		t.Fatalf("missing nested host_path not reported:\n%s", render(t, f, diags))
	}
}

func TestFakeProviderDefaultsAndNestedBlocks(t *testing.T) {
	t.Parallel()
	f := mustLoad(t, `variable "cache" { default = "/var/cache" }
sandbox "fakebox" "dev" {
  image = "debian"
  mount {
    host_path = var.cache
  }
  mount {
    host_path    = "/b"
    sandbox_path = "/mnt/b"
    read_only    = true
  }
}
sandbox "fakebox" "other" {
  image = "alpine"
  cpus  = 2
  resources { memory = "1g" }
}
`)
	type mount struct {
		HostPath    string  `cty:"host_path"`
		SandboxPath *string `cty:"sandbox_path"`
		ReadOnly    bool    `cty:"read_only"`
	}
	type resources struct {
		Memory *string `cty:"memory"`
	}
	type box struct {
		Image     string     `cty:"image"`
		Network   string     `cty:"network"`
		CPUs      *int       `cty:"cpus"`
		Mounts    []mount    `cty:"mount"`
		Resources *resources `cty:"resources"`
	}
	var dev, other box
	if err := configOf(t, f, f.Sandboxes[0]).Decode(&dev); err != nil {
		t.Fatal(err)
	}
	if err := configOf(t, f, f.Sandboxes[1]).Decode(&other); err != nil {
		t.Fatal(err)
	}
	if dev.Network != "bridge" || dev.CPUs != nil || dev.Resources != nil || len(dev.Mounts) != 2 {
		t.Fatalf("dev decoded as %+v", dev)
	}
	if dev.Mounts[0].HostPath != "/var/cache" || dev.Mounts[0].ReadOnly || dev.Mounts[0].SandboxPath != nil {
		t.Fatalf("mount 0 = %+v", dev.Mounts[0])
	}
	if !dev.Mounts[1].ReadOnly || *dev.Mounts[1].SandboxPath != "/mnt/b" {
		t.Fatalf("mount 1 = %+v", dev.Mounts[1])
	}
	if *other.CPUs != 2 || *other.Resources.Memory != "1g" || len(other.Mounts) != 0 {
		t.Fatalf("other decoded as %+v", other)
	}
	if got := f.Sandboxes[1].Address; got != "sandbox.fakebox.other" {
		t.Fatalf("address %q", got)
	}
}

// TestFakeAttrRange: a plugin names an attribute path; the block maps it
// to where it is written.
func TestFakeAttrRange(t *testing.T) {
	t.Parallel()
	f := mustLoad(t, `sandbox "fakebox" "dev" {
  image = "debian"
  mount {
    host_path = "/a"
  }
  mount {
    host_path = "/b"
  }
}
agent "fakeagent" "a" {
  command = ["x"]
  env = {
    FOO = "1"
  }
}
`)
	box, agent := f.Sandboxes[0], f.Agents[0]
	cases := []struct {
		block     *ProviderBlock
		attr      string
		line, col int
	}{
		{box, "image", 2, 11},
		{box, "mount.1.host_path", 7, 17},
		{box, "mount.1", 6, 3},
		{box, "network", 1, 1}, // not in source: the block
		{box, "", 1, 1},
		{agent, "env.FOO", 13, 11},
		{agent, "command.0", 11, 14},
	}
	schemas := fakeSource()
	for _, c := range cases {
		rng := c.block.AttrRange(schemas[string(c.block.Kind)+"/"+c.block.Plugin].schema, c.attr)
		wantAt(t, &hcl.Diagnostic{Summary: c.attr, Subject: &rng}, "sanddune.hcl", c.line, c.col)
	}
}

func TestFakeDuplicateBlocks(t *testing.T) {
	t.Parallel()
	f, diags := load(t, header+`
sandbox "fakebox" "dev" {
  image = "again"
}
variable "v" { default = 1 }
variable "v" { default = 2 }
run "r" { prompt = "x" }
run "r" { prompt = "y" }
`)
	wantError(t, f, diags, "Duplicate sandbox block")
	wantError(t, f, diags, "Duplicate variable block")
	wantError(t, f, diags, "Duplicate run block")
}

func TestFakeInvalidPluginSchema(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "sanddune.hcl", `sandbox "broken" "x" {}`)
	f, diags := Load(path, nil, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = f.DecodeProvider(f.Sandboxes[0], sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "n", Type: cty.Number, Default: cty.StringVal("not a number")},
	}})
	if d := wantError(t, f, diags, "Invalid plugin schema"); !strings.Contains(d.Detail, `"n"`) {
		t.Fatalf("detail %q", d.Detail)
	}
}
