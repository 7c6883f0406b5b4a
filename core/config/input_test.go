package config

import (
	"bytes"
	"math/rand"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestDeepNestingIsADiagnostic(t *testing.T) {
	t.Parallel()
	const n = 100000
	for name, src := range map[string]string{
		"brackets":      "x = " + strings.Repeat("[", n),
		"parens":        "x = " + strings.Repeat("(", n),
		"interpolation": "x = " + strings.Repeat(`"${`, n),
		"heredoc":       "x = <<EOT\n" + strings.Repeat("${[", n) + "\nEOT\n",
	} {
		for _, file := range []string{"sanddune.hcl", "sanddune.hcl.json"} {
			if strings.HasSuffix(file, ".json") {
				src = `{"x": ` + strings.TrimPrefix(src, "x = ")
			}
			f, diags := load(t, src, loadOpts{name: file})
			d := wantError(t, f, diags, "Nested too deeply")
			if d.Subject == nil || d.Subject.Start.Line < 1 || !strings.Contains(d.Detail, "200 levels") {
				t.Errorf("%s %s: %+v", name, file, d)
			}
		}
	}
	// --var values are parsed as HCL expressions too.
	f, diags := load(t, `variable "v" {
  type = list(string)
}
`, loadOpts{name: "sanddune.hcl", vars: map[string]string{"v": strings.Repeat("[", n)}})
	if !strings.Contains(render(t, f, diags), "Nested too deeply") {
		t.Errorf("--var: %s", render(t, f, diags))
	}
	// Nesting a real config needs stays fine.
	mustLoad(t, "variable \"v\" {\n  default = "+strings.Repeat("[", 50)+strings.Repeat("]", 50)+"\n}\n"+
		"variable \"w\" {\n  default = <<-EOT\n  ${\"{[(\"}\n  EOT\n}\n# ((((\n/* [[[[ */\n")
}

func TestBinaryConfigRefusedEarly(t *testing.T) {
	t.Parallel()
	garbage := make([]byte, 256<<10)
	rand.New(rand.NewSource(1)).Read(garbage)
	garbage[0] = 0xff
	f, diags := load(t, "run \"a\" {}\n"+string(garbage))
	if len(diags) != 1 {
		t.Fatalf("%d diagnostics, want 1", len(diags))
	}
	d := wantError(t, f, diags, "Not a text file")
	wantAt(t, d, "sanddune.hcl", 2, 1)
	out := render(t, f, diags)
	if len(out) > 1000 || bytes.ContainsAny([]byte(out), "\x00\x1b") {
		t.Errorf("rendering echoes the garbage (%d bytes):\n%q", len(out), out)
	}
}

func TestDiagnosticsShownAreCapped(t *testing.T) {
	t.Parallel()
	var src strings.Builder
	for i := 0; i < 100; i++ {
		src.WriteString("nope {}\n")
	}
	f, diags := load(t, src.String())
	if len(diags) < 100 {
		t.Fatalf("%d diagnostics", len(diags))
	}
	out := render(t, f, diags)
	if n := strings.Count(out, "sanddune.hcl:"); n != MaxShownDiagnostics || !strings.Contains(out, "... and 80 more diagnostics") {
		t.Errorf("%d shown:\n%s", n, out)
	}
}

func TestConfigThatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "sanddune.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device"} {
		_, diags := ReadSource(path)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
			t.Errorf("%s: %v", path, diags)
		}
	}
	big := writeFile(t, t.TempDir(), "big.hcl", strings.Repeat("# x\n", MaxConfigSize/4+1))
	if _, diags := ReadSource(big); !strings.Contains(diags.Error(), "more than the limit of 1 MiB") {
		t.Errorf("big: %v", diags)
	}
}
