package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	out, diags := Format([]byte("run \"r\" {\nprompt=\"x\"\n  max_iterations   = 2\n}\n"), "sanddune.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := "run \"r\" {\n  prompt         = \"x\"\n  max_iterations = 2\n}\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	if again, _ := Format(out, "sanddune.hcl"); !bytes.Equal(again, out) {
		t.Fatal("formatting is not idempotent")
	}
}

func TestFormatSyntaxError(t *testing.T) {
	t.Parallel()
	src := []byte("run \"r\" {\n  prompt = \n}\n")
	out, diags := Format(src, "bad.hcl")
	if !diags.HasErrors() || !bytes.Equal(out, src) {
		t.Fatalf("syntax error not reported or source changed: %v", diags)
	}
	var b bytes.Buffer
	if err := WriteDiagnostics(&b, map[string]*hcl.File{"bad.hcl": {Bytes: src}}, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "bad.hcl line 2") {
		t.Fatal(b.String())
	}
}

func TestFormatLeavesJSONAlone(t *testing.T) {
	t.Parallel()
	src := []byte(`{"run":{"r":{"prompt":"x"}}}`)
	out, diags := Format(src, "sanddune.hcl.json")
	if diags.HasErrors() || len(diags) != 1 || !bytes.Equal(out, src) {
		t.Fatalf("got %q %v", out, diags)
	}
}
