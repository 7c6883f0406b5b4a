package output

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

const planSchema = `{
  "type": "object",
  "required": ["issues"],
  "properties": {
    "issues": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["id", "title"],
        "properties": {"id": {"type": "integer"}, "title": {"type": "string"}}
      }
    }
  }
}`

func compiled(t *testing.T, s Spec) *Spec {
	t.Helper()
	if err := s.Compile(); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestExtractTakesTheLastMatch(t *testing.T) {
	s := compiled(t, Spec{Tag: "plan", Schema: planSchema})
	text := `I will write <plan> like this: <plan>{"issues": []}</plan>.
Done: <plan>
{"issues": [{"id": 1, "title": "a"}, {"id": 2, "title": "b"}]}
</plan> <promise>COMPLETE</promise>`
	v, err := s.Extract(text)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"issues":[{"id":1,"title":"a"},{"id":2,"title":"b"}]}` {
		t.Fatalf("payload %s", b)
	}
	issues := v.(map[string]any)["issues"].([]any)
	if n := issues[1].(map[string]any)["id"].(json.Number); n != "2" {
		t.Fatalf("id %v, want json.Number 2", n)
	}
}

func TestExtractString(t *testing.T) {
	s := compiled(t, Spec{Tag: "summary", Type: String})
	v, err := s.Extract("<summary>old</summary> then <summary>\n  all good  \n</summary>")
	if err != nil || v != "all good" {
		t.Fatalf("got %q, %v", v, err)
	}
}

func TestExtractFailures(t *testing.T) {
	s := compiled(t, Spec{Tag: "plan", Schema: planSchema})
	for _, tc := range []struct {
		name, text, raw, path, msg string
	}{
		{"missing tag", "no plan today", "", "", "no <plan>…</plan> in the agent's final text"},
		{"only an opening tag", "<plan>{}", "", "", "no <plan>…</plan>"},
		{"malformed JSON", "<plan>{issues: [}</plan>", "{issues: [}", "", "not JSON"},
		{"schema violation", `<plan>{"issues": [{"id": "one", "title": "a"}]}</plan>`, `{"issues": [{"id": "one", "title": "a"}]}`, "/issues/0/id", "integer"},
		{"missing property", `<plan>{"issues": [{"id": 1}]}</plan>`, `{"issues": [{"id": 1}]}`, "/issues/0", "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Extract(tc.text)
			var oe *Error
			if !errors.As(err, &oe) {
				t.Fatalf("error %v, want *Error", err)
			}
			if oe.Tag != "plan" || oe.Raw != tc.raw || oe.Cause.InstancePath != tc.path || !strings.Contains(oe.Cause.Message, tc.msg) {
				t.Fatalf("got %+v, want raw %q path %q message with %q", oe, tc.raw, tc.path, tc.msg)
			}
		})
	}
}

func TestCompileProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		attr string
	}{
		{"bad tag", Spec{Tag: "a plan", Type: String}, "tag"},
		{"neither schema nor type", Spec{Tag: "plan"}, "type"},
		{"unknown type", Spec{Tag: "plan", Type: "yaml"}, "type"},
		{"schema with string", Spec{Tag: "plan", Type: String, Schema: `{}`}, "schema"},
		{"schema not JSON", Spec{Tag: "plan", Schema: `{type: object}`}, "schema"},
		{"invalid schema", Spec{Tag: "plan", Schema: `{"type": 12}`}, "schema"},
		{"external ref", Spec{Tag: "plan", Schema: `{"$ref": "other.json"}`}, "schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Compile()
			var p *Problem
			if !errors.As(err, &p) || p.Attribute != tc.attr {
				t.Fatalf("error %v, want a problem at %s", err, tc.attr)
			}
		})
	}
}

func TestCty(t *testing.T) {
	s := compiled(t, Spec{Tag: "plan", Schema: planSchema})
	v, err := s.Extract(`<plan>{"issues": [{"id": 7, "title": "x"}]}</plan>`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Cty(v)
	if err != nil {
		t.Fatal(err)
	}
	issue := c.GetAttr("issues").Index(cty.NumberIntVal(0))
	if issue.GetAttr("title").AsString() != "x" || !issue.GetAttr("id").RawEquals(cty.NumberIntVal(7)) {
		t.Fatalf("cty %#v", c)
	}
	if c, _ := Cty("s"); c.AsString() != "s" {
		t.Fatalf("string %#v", c)
	}
}
