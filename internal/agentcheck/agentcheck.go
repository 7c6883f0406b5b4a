// Package agentcheck holds the in-tree agent providers' own test helpers:
// Configure's diagnostics case by case, and the description of a block.
package agentcheck

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

// Case is one Configure call: the agent block and the attributes of the
// error diagnostics it must produce, in order.
type Case struct {
	Name  string
	Attrs map[string]cty.Value
	Want  []string
}

// Configure runs each case as a subtest.
func Configure(t *testing.T, p sdk.AgentProvider, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ds, err := p.Configure(t.Context(), agentkittest.Config(t, p, c.Attrs))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				if d.Severity == sdk.SeverityError {
					got = append(got, d.Attribute)
				}
			}
			if !reflect.DeepEqual(got, c.Want) {
				t.Errorf("error attributes = %v, want %v (%v)", got, c.Want, ds)
			}
		})
	}
}

// Describe returns p's description of the agent block attrs.
func Describe(t *testing.T, p sdk.AgentProvider, attrs map[string]cty.Value) sdk.AgentDescription {
	t.Helper()
	d, err := p.Describe(t.Context(), agentkittest.Config(t, p, attrs))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
