package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// FuzzLoad: any config file (HCL or JSON) and any --var or
// SANDDUNE_VAR_ value load to a config or to diagnostics that render,
// never a crash or a hang (deep nesting, binary input, huge diagnostics).
func FuzzLoad(f *testing.F) {
	f.Add(header+`run "r" { prompt = "x" }`, "5")
	f.Add(header+`variable "v" { type = list(string) }
run "r" {
  prompt     = "x ${var.v[0]}"
  max_iterations = length(var.v)
}`, `["a", "b"]`)
	f.Add(`variable "v" { type = object({ a = number }) }
variable "w" { type = number }`, `{ a = "x" }`)
	f.Add(`variable "v" {}`+"\n"+`x = <<EOT`+"\n${[\nEOT\n", "[[")
	f.Add(`{"run": {"r": {"prompt": "x"}}}`, "")
	f.Add(strings.Repeat("[", MaxNesting+1), strings.Repeat(`${"`, MaxNesting+1))
	f.Add("\xff\x00 = 1", "\xff")
	f.Add(`sandbox "fakebox" "a" { image = "x" mount { host_path = "." } }`, "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src, value string) {
		for _, name := range []string{"sanddune.hcl", "sanddune.hcl.json"} {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			file, diags := Load(path, map[string]string{"v": value}, []string{EnvVarPrefix + "w=" + value})
			schemas := fakeSource()
			for _, p := range append(append([]*ProviderBlock{}, file.Sandboxes...), file.Agents...) {
				if c, ok := schemas[string(p.Kind)+"/"+p.Plugin]; ok {
					_, more := file.DecodeProvider(p, c.schema)
					diags = append(diags, more...)
				}
			}
			for _, r := range file.Runs {
				diags = append(diags, r.Diags...)
			}
			if CheckSource([]byte(src), path).HasErrors() && !diags.HasErrors() {
				t.Fatalf("%s: CheckSource refused it, Load did not", name)
			}
			if err := file.WriteDiagnostics(io.Discard, diags, 80, false); err != nil {
				t.Fatal(err)
			}
			for _, d := range diags {
				if d.Severity == hcl.DiagError && d.Summary == "" {
					t.Fatalf("%s: error diagnostic without a summary: %+v", name, d)
				}
			}
		}
	})
}
