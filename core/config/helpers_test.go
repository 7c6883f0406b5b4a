package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

type fakeComponent struct {
	info   sdk.Info
	schema sdk.Schema
}

// fakeSchemas are plugin schemas keyed by "<kind>/<plugin>".
type fakeSchemas map[string]fakeComponent

var fakeBoxSchema = sdk.Schema{
	Attributes: []sdk.Attribute{
		{Name: "image", Type: cty.String, Required: true},
		{Name: "network", Type: cty.String, Default: cty.StringVal("bridge")},
		{Name: "cpus", Type: cty.Number},
	},
	Blocks: []sdk.NestedBlock{
		{TypeName: "mount", Nesting: sdk.NestingList, Body: sdk.Schema{Attributes: []sdk.Attribute{
			{Name: "host_path", Type: cty.String, Required: true},
			{Name: "sandbox_path", Type: cty.String},
			{Name: "read_only", Type: cty.Bool, Default: cty.False},
		}}},
		{TypeName: "resources", Nesting: sdk.NestingSingle, Body: sdk.Schema{Attributes: []sdk.Attribute{
			{Name: "memory", Type: cty.String},
		}}},
	},
}

// fakeSource serves sandboxes fakebox (bind-mount), fakeiso (isolated),
// fakenocap (no capabilities reported) and the agent fakeagent.
func fakeSource() fakeSchemas {
	sandbox := func(name string, caps *sdk.SandboxCapabilities) fakeComponent {
		return fakeComponent{info: sdk.Info{Name: name, Kind: sdk.KindSandbox, Sandbox: caps}, schema: fakeBoxSchema}
	}
	return fakeSchemas{
		"sandbox/fakebox":   sandbox("fakebox", &sdk.SandboxCapabilities{Contract: sdk.ContractBindMount}),
		"sandbox/fakeiso":   sandbox("fakeiso", &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated}),
		"sandbox/fakenocap": sandbox("fakenocap", nil),
		"agent/fakeagent": {info: sdk.Info{Name: "fakeagent", Kind: sdk.KindAgent}, schema: sdk.Schema{
			Attributes: []sdk.Attribute{
				{Name: "command", Type: cty.List(cty.String), Required: true},
				{Name: "env", Type: cty.Map(cty.String), Default: cty.MapValEmpty(cty.String)},
				{Name: "model", Type: cty.String},
			},
		}},
	}
}

// header declares one sandbox and one agent, so runs may omit references.
const header = `
sandbox "fakebox" "dev" {
  image = "debian"
}

agent "fakeagent" "script" {
  command = ["sh", "-c", "echo hi"]
}
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type loadOpts struct {
	name string
	vars map[string]string
	env  []string
}

func load(t *testing.T, src string, opts ...loadOpts) (*File, hcl.Diagnostics) {
	t.Helper()
	o := loadOpts{name: "sanddune.hcl"}
	if len(opts) > 0 {
		o = opts[0]
	}
	path := writeFile(t, t.TempDir(), o.name, src)
	return loadPath(t, path, o.vars, o.env)
}

// loadPath loads a file and decodes its blocks the way the planner does
// (provider bodies against the fake schemas), returning every diagnostic.
func loadPath(t *testing.T, path string, vars map[string]string, env []string) (*File, hcl.Diagnostics) {
	t.Helper()
	f, diags := Load(path, vars, env)
	schemas := fakeSource()
	for _, p := range append(append([]*ProviderBlock{}, f.Sandboxes...), f.Agents...) {
		diags = append(diags, p.Diags...)
		c, ok := schemas[string(p.Kind)+"/"+p.Plugin]
		if !ok {
			t.Fatalf("no fake plugin %s/%s", p.Kind, p.Plugin)
		}
		_, more := f.DecodeProvider(p, c.schema)
		diags = append(diags, more...)
	}
	for _, r := range f.Runs {
		diags = append(diags, r.Diags...)
	}
	return f, diags
}

// configOf decodes a provider block against its fake schema.
func configOf(t *testing.T, f *File, p *ProviderBlock) sdk.Config {
	t.Helper()
	cfg, diags := f.DecodeProvider(p, fakeSource()[string(p.Kind)+"/"+p.Plugin].schema)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg
}

func render(t *testing.T, f *File, diags hcl.Diagnostics) string {
	t.Helper()
	var b bytes.Buffer
	if err := f.WriteDiagnostics(&b, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func mustLoad(t *testing.T, src string, opts ...loadOpts) *File {
	t.Helper()
	f, diags := load(t, src, opts...)
	if diags.HasErrors() {
		t.Fatalf("unexpected diagnostics:\n%s", render(t, f, diags))
	}
	return f
}

// wantError returns the first error whose summary contains summary.
func wantError(t *testing.T, f *File, diags hcl.Diagnostics, summary string) *hcl.Diagnostic {
	t.Helper()
	for _, d := range diags {
		if d.Severity == hcl.DiagError && strings.Contains(d.Summary, summary) {
			return d
		}
	}
	t.Fatalf("no error %q in:\n%s", summary, render(t, f, diags))
	return nil
}

// wantAt checks that a diagnostic points at line:col of its file.
func wantAt(t *testing.T, d *hcl.Diagnostic, file string, line, col int) {
	t.Helper()
	if d.Subject == nil {
		t.Fatalf("%s: no subject", d.Summary)
	}
	if filepath.Base(d.Subject.Filename) != file || d.Subject.Start.Line != line || d.Subject.Start.Column != col {
		t.Fatalf("%s: at %s, want %s:%d,%d", d.Summary, d.Subject, file, line, col)
	}
}
