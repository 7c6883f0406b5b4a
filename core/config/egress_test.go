package config

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestEgressBlockIsTheHosts: a sandbox block's egress block is taken out
// of the body its provider decodes, agent defaults to true, attribute
// paths locate their source (list items, hosts keys with dots), and a
// second egress block or a value of the wrong type is reported at its
// place.
func TestEgressBlockIsTheHosts(t *testing.T) {
	f, diags := Load(writeFile(t, t.TempDir(), "sanddune.hcl", `sandbox "docker" "a" {
  image = "x"
  egress {
    allow = ["api.example.com", "10.0.0.0/8"]
    hosts = { "ok.test" = "172.17.0.1" }
  }
}
sandbox "docker" "b" {
  egress { agent = false }
  egress { allow = ["x"] }
}
sandbox "docker" "c" {}
sandbox "docker" "d" {
  egress { allow = {} }
}
`), nil, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, b, c, d := f.Sandboxes[0], f.Sandboxes[1], f.Sandboxes[2], f.Sandboxes[3]
	if e := a.Egress; e == nil || len(e.Body.Allow) != 2 || e.Body.Hosts["ok.test"] != "172.17.0.1" || !e.AgentEndpoints() || e.Diags.HasErrors() {
		t.Fatalf("egress of a: %+v", e)
	}
	content, _, _ := a.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "egress"}}})
	if len(content.Blocks) != 0 {
		t.Errorf("the provider's body still holds the egress block")
	}
	for path, want := range map[string]int{"allow.1": 4, "hosts.ok.test": 5, "agent": 3, "allow": 4} {
		if r := a.Egress.Range(path); r.Start.Line != want {
			t.Errorf("Range(%q) at line %d, want %d", path, r.Start.Line, want)
		}
	}
	if b.Egress == nil || b.Egress.AgentEndpoints() {
		t.Errorf("agent = false: %+v", b.Egress)
	}
	if b.Diags.HasErrors() || !strings.Contains(b.Egress.Diags.Error(), "Duplicate egress block") {
		t.Errorf("a second egress block: %v, egress: %v", b.Diags, b.Egress.Diags)
	}
	if c.Egress != nil {
		t.Errorf("a block without egress has %+v", c.Egress)
	}
	if ds := d.Egress.Diags; len(ds) != 1 || ds[0].Subject.Start.Line != 14 || !strings.Contains(ds[0].Error(), "list of string required") {
		t.Errorf("allow of the wrong type: %v", ds)
	}
}
