// Package planning holds what core.Plan works with before a run is
// planned: diagnostics naming block and attribute, provider blocks
// resolved, decoded, configured and described once each, and what the
// runs of one repository share.
package planning

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/missingstudio/sanddune/core/config"
)

// The planner's names for config's diagnostics.
type (
	Severity    = config.Severity
	Diagnostic  = config.Diagnostic
	Diagnostics = config.Diagnostics
)

// The severities.
const (
	Error   = config.Error
	Warning = config.Warning
)

// locate gives the diagnostics of block that have no source range the
// range of their attribute in it.
func locate(ds Diagnostics, block string, attrRange func(attr string) hcl.Range) {
	for i := range ds {
		if ds[i].Subject == nil && ds[i].Block == block {
			rng := attrRange(ds[i].Attribute)
			ds[i].Subject = &rng
		}
	}
}
