package planning

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/internal/egress/policy"
	"github.com/missingstudio/sanddune/sdk"
)

// egressOf reads a sandbox block's egress block.
func egressOf(e *config.EgressBlock) *run.Egress {
	if e == nil {
		return nil
	}
	return &run.Egress{Allow: e.Body.Allow, Hosts: e.Body.Hosts, NoAgent: !e.AgentEndpoints()}
}

// egressRange locates the egress diagnostics of sandbox block b.
func egressRange(b *config.ProviderBlock) func(attr string) hcl.Range {
	return func(attr string) hcl.Range {
		if rest, ok := strings.CutPrefix(attr, "egress"); ok && b.Egress != nil {
			return b.Egress.Range(strings.TrimPrefix(rest, "."))
		}
		return b.AttrRange(sdk.Schema{Attributes: []sdk.Attribute{{Name: attr}}}, attr)
	}
}

// CheckEgress checks a sandbox's egress policy, once per sandbox block:
// each entry, that the provider enforces a policy, and that the sandbox
// has a network of its own to apply it to (no network = "none", none of
// the conflicts the provider described). Every problem is reported.
func CheckEgress(block, plugin string, e *run.Egress, caps sdk.SandboxCapabilities, cfg sdk.Config, conflicts sdk.Diagnostics) Diagnostics {
	if e == nil {
		return nil
	}
	var ds Diagnostics
	diag := func(attr, summary, detail string, args ...any) {
		ds = append(ds, Diagnostic{Severity: Error, Block: block, Attribute: attr, Summary: summary, Detail: fmt.Sprintf(detail, args...)})
	}
	for i, a := range e.Allow {
		if _, errs := policy.Parse([]string{a}, nil); len(errs) > 0 {
			diag(fmt.Sprintf("egress.allow.%d", i), "Invalid egress entry", "%v.", errs[0])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Hosts)) {
		if _, errs := policy.Parse(nil, map[string]string{name: e.Hosts[name]}); len(errs) > 0 {
			diag("egress.hosts."+name, "Invalid egress host", "%v.", errs[0])
		}
	}
	if !caps.Egress {
		diag("egress", "The sandbox cannot enforce egress",
			"%s's provider (%s) does not declare the egress capability: it cannot confine the sandbox's network, so it would reach everything. "+
				"Use a sandbox provider that declares the egress capability (`egress` among the CAPABILITIES of `sanddune plugins list`), or remove the egress block.", block, plugin)
	}
	if caps.NetworkNone && networkNone(cfg) {
		diag("network", "egress with network = \"none\"",
			"%s has no network at all (network = \"none\"), so an egress policy would allow nothing: remove one of them.", block)
	}
	if caps.Egress {
		for _, c := range conflicts {
			diag(c.Attribute, c.Summary, "%s: %s", block, c.Detail)
		}
	}
	return ds
}

// networkNone says whether a provider config sets `network = "none"` (or
// a list holding it), which providers declaring the NetworkNone
// capability honour.
func networkNone(cfg sdk.Config) bool {
	v := cfg.Value
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() || !v.Type().HasAttribute("network") {
		return false
	}
	n := v.GetAttr("network")
	if n.IsNull() || !n.IsWhollyKnown() {
		return false
	}
	if n.Type() == cty.String {
		return n.AsString() == "none"
	}
	if n.CanIterateElements() && !n.Type().IsMapType() && !n.Type().IsObjectType() {
		for it := n.ElementIterator(); it.Next(); {
			if _, e := it.Element(); e.Type() == cty.String && !e.IsNull() && e.AsString() == "none" {
				return true
			}
		}
	}
	return false
}

// egressPolicy is a run's policy for CreateRequest: the sandbox block's
// entries and, unless it says agent = false, the agent's endpoints.
func (c *runCheck) egressPolicy() {
	e := c.o.Sandbox.Egress
	if e == nil || c.o.NoSandbox {
		return
	}
	p := &sdk.EgressPolicy{Allow: slices.Clone(e.Allow), Hosts: maps.Clone(e.Hosts)}
	if !e.NoAgent {
		for _, ep := range c.desc.Endpoints {
			if _, errs := policy.Parse([]string{ep}, nil); len(errs) > 0 {
				c.fail("agent", "Invalid agent endpoint", fmt.Errorf("%s declares the endpoint %q, which is no egress entry (%v): "+
					"fix it where it comes from (the agent block's config, such as an endpoints attribute, or else its plugin), "+
					"or set agent = false in the egress block and list what the agent needs in allow", c.o.Agent.Address, ep, errs[0]))
				continue
			}
			if !slices.Contains(p.Allow, ep) {
				p.Allow = append(p.Allow, ep)
			}
		}
	}
	c.s.Egress = p
}

// located gives the egress diagnostics of sandbox block b their ranges.
func located(ds Diagnostics, b *config.ProviderBlock) Diagnostics {
	locate(ds, b.Address, egressRange(b))
	return ds
}
