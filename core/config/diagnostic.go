package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Severity says whether a diagnostic stops the plan.
type Severity = hcl.DiagnosticSeverity

// The severities.
const (
	Error   = hcl.DiagError
	Warning = hcl.DiagWarning
)

// Diagnostic is one problem of a config (or of a run built in Go), found
// while planning it: it names the block and the attribute.
type Diagnostic struct {
	Severity Severity
	// Block is the block's address ("run.fix", "sandbox.docker.default"),
	// "" for the file as a whole.
	Block string
	// Attribute is the path of the attribute in the block
	// ("branch_strategy.type"), "" for the block as a whole.
	Attribute string
	Summary   string
	Detail    string
	// Subject is where in the config file, when planned from one.
	Subject *hcl.Range
	// Err is the underlying error, if any.
	Err error
}

func (d Diagnostic) Error() string {
	var b strings.Builder
	if d.Block != "" {
		b.WriteString(d.Block)
		if d.Attribute != "" {
			b.WriteString("." + d.Attribute)
		}
		b.WriteString(": ")
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString(": " + strings.TrimSuffix(d.Detail, "."))
	}
	return b.String()
}

func (d Diagnostic) Unwrap() error { return d.Err }

// HCL returns the diagnostic for hcl's renderer.
func (d Diagnostic) HCL() *hcl.Diagnostic {
	detail := d.Detail
	if d.Subject == nil && d.Block != "" {
		where := d.Block
		if d.Attribute != "" {
			where += "." + d.Attribute
		}
		detail = fmt.Sprintf("%s: %s", where, detail)
	}
	return &hcl.Diagnostic{Severity: d.Severity, Summary: d.Summary, Detail: detail, Subject: d.Subject}
}

// Diagnostics are problems found while planning; as an error, its errors.
type Diagnostics []Diagnostic

func (ds Diagnostics) Error() string {
	msgs := make([]string, len(ds))
	for i, d := range ds {
		msgs[i] = d.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap gives errors.Is and errors.As each diagnostic.
func (ds Diagnostics) Unwrap() []error {
	out := make([]error, len(ds))
	for i, d := range ds {
		out[i] = d
	}
	return out
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool { return len(ds.Errors()) > 0 }

// Errors are the diagnostics that are errors.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == Error {
			out = append(out, d)
		}
	}
	return out
}

// HCL returns the diagnostics for hcl's renderer.
func (ds Diagnostics) HCL() hcl.Diagnostics {
	out := make(hcl.Diagnostics, len(ds))
	for i, d := range ds {
		out[i] = d.HCL()
	}
	return out
}

// AsWarnings returns the diagnostics as warnings.
func (ds Diagnostics) AsWarnings() Diagnostics {
	out := make(Diagnostics, len(ds))
	for i, d := range ds {
		d.Severity = Warning
		out[i] = d
	}
	return out
}

// FromHCL attributes hcl diagnostics to a block.
func FromHCL(block string, hds hcl.Diagnostics) Diagnostics {
	out := make(Diagnostics, len(hds))
	for i, h := range hds {
		out[i] = Diagnostic{Severity: h.Severity, Block: block, Summary: h.Summary, Detail: h.Detail, Subject: h.Subject}
	}
	return out
}
