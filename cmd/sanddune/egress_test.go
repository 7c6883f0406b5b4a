package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateEgress: the problems of egress blocks are reported in one
// pass, each once, at the attribute: a malformed entry naming it, a bad
// hosts address, egress on a provider that cannot enforce it (local,
// with bubblewrap suggested), and egress together with network = "none".
func TestValidateEgress(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {
  egress {
    allow = ["api.anthropic.com", "exa mple.com", "10.0.0.0/33"]
    hosts = { "ok.test" = "not-an-ip" }
  }
}
sandbox "bubblewrap" "off" {
  network = "none"
  egress {
    allow = ["github.com"]
    agent = false
  }
}
agent "command" "a" { command = ["true"] }
run "one" {
  sandbox = sandbox.local.dev
  prompt  = "x"
  allow_unconfined = true
}
run "two" {
  sandbox = sandbox.bubblewrap.off
  prompt  = "x"
}
`)
	r := run(t, dir, "validate")
	for _, want := range []string{
		`sanddune.hcl:3:35: Error: Invalid egress entry`, `egress.allow entry "exa mple.com"`,
		`sanddune.hcl:3:51: Error: Invalid egress entry`, `egress.allow entry "10.0.0.0/33"`,
		`sanddune.hcl:4:27: Error: Invalid egress host`, `"not-an-ip" is not an IP address`,
		`sanddune.hcl:2:3: Error: The sandbox cannot enforce egress`, `sandbox.local.dev's provider (local) does not declare the egress capability`,
		`sanddune.hcl:8:13: Error: egress with network = "none"`,
	} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("want %q once in the output", want)
		}
	}
	errs := 5 // and one more while bubblewrap does not enforce egress
	if strings.Contains(r.stderr, "sandbox.bubblewrap.off's provider (bubblewrap) does not declare the egress capability") {
		errs++
	}
	if r.code != 1 || strings.Count(r.stderr, "Error:") != errs+1 || t.Failed() { // +1: the closing line
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
