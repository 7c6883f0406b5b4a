package config

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
)

// EgressBlock is a sandbox block's `egress` block: the only network its
// sandboxes may reach. The host decodes it (the provider's schema does not
// declare it) and core.Plan checks it.
type EgressBlock struct {
	Body EgressBody
	// Diags are the block's decoding problems.
	Diags     hcl.Diagnostics
	DeclRange hcl.Range
	attrs     hcl.Attributes
}

// EgressBody is the schema of an egress block, as written.
type EgressBody struct {
	Allow []string          `hcl:"allow,optional"`
	Hosts map[string]string `hcl:"hosts,optional"`
	// Agent (default true) also allows the endpoints the run's agent
	// plugin declares.
	Agent *bool `hcl:"agent,optional"`
}

var egressSchema, _ = gohcl.ImpliedBodySchema(EgressBody{})

// splitEgress takes the egress block out of a sandbox block's body: it
// returns the block (nil when there is none) and the body left for the
// provider's schema. A second egress block is an error.
func (f *File) splitEgress(body hcl.Body) (*EgressBlock, hcl.Body, hcl.Diagnostics) {
	content, remain, diags := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "egress"}}})
	var e *EgressBlock
	for _, b := range content.Blocks {
		if e != nil { // reported with the first, so the block's other problems still are
			e.Diags = append(e.Diags, errorDiag(b.DefRange, "Duplicate egress block",
				"A sandbox block has at most one egress block; the first is at %s.", e.DeclRange))
			continue
		}
		e = &EgressBlock{DeclRange: b.DefRange}
		c, _, _ := b.Body.PartialContent(egressSchema)
		e.attrs = c.Attributes
		e.Diags = gohcl.DecodeBody(b.Body, f.evalCtx, &e.Body)
	}
	return e, remain, diags
}

// AgentEndpoints says whether the run's agent endpoints are allowed too.
func (e *EgressBlock) AgentEndpoints() bool { return e.Body.Agent == nil || *e.Body.Agent }

// Range returns the source range of an attribute path in the block
// ("allow.2", "hosts.ok.test", "agent"), or the block's when it is not
// in the source.
func (e *EgressBlock) Range(path string) hcl.Range {
	name, rest, _ := strings.Cut(path, ".")
	attr, ok := e.attrs[name]
	if !ok {
		return e.DeclRange
	}
	if rest == "" {
		return attr.Expr.Range()
	}
	if name == "hosts" { // a key may hold dots
		return exprRange(attr.Expr, []string{rest})
	}
	return exprRange(attr.Expr, strings.Split(rest, "."))
}
