// Package config decodes a sanddune HCL file and keeps its source ranges;
// it checks nothing beyond the HCL itself (core.Plan does).
//
// Load decodes in phases, the way Packer and Nomad do: the root schema
// (required_plugins, variable, sandbox, agent and run blocks), then the variables (defaults <
// SANDDUNE_VAR_<NAME> env < --var), then the run blocks declaratively
// (gohcl, into RunBody). A provider block keeps its body (`,remain`) until
// the planner knows its plugin's schema and calls File.DecodeProvider.
// Problems of one block stay with the block (Diags), so that a broken block
// does not stop the others; render them with File.WriteDiagnostics.
package config

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// File is a decoded config file. Load returns one even when it reports
// errors, so that its diagnostics can be rendered.
type File struct {
	// Path is the file as given to Load; Dir is its absolute directory.
	Path string
	Dir  string

	Variables []*Variable
	Sandboxes []*ProviderBlock
	Agents    []*ProviderBlock
	// Runs are in file order, and so are Sessions.
	Runs     []*RunBlock
	Sessions []*SessionBlock
	// Pipelines are the pipeline blocks, in file order.
	Pipelines []*PipelineBlock
	// RequiredPlugins is the required_plugins block, in no order.
	RequiredPlugins []*RequiredPlugin

	parser  *hclparse.Parser
	evalCtx *hcl.EvalContext
	// runLabels and sessionLabels are the blocks' labels, for references.
	runLabels, sessionLabels map[string]hcl.Range
}

// Variable is a declared input variable with its final value.
type Variable struct {
	Name        string
	Description string
	// Type is the declared type constraint (cty.DynamicPseudoType when none).
	Type      cty.Type
	Value     cty.Value
	DeclRange hcl.Range
}

// ProviderBlock is a `sandbox "<plugin>" "<name>"` or
// `agent "<plugin>" "<name>"` block; its body is decoded against its
// plugin's schema by File.DecodeProvider.
type ProviderBlock struct {
	Kind    sdk.Kind
	Plugin  string
	Name    string
	Address string // e.g. "sandbox.docker.default"

	DeclRange hcl.Range
	// PluginRange is the range of the plugin (type) label.
	PluginRange hcl.Range
	// Body is the block's body, for the plugin's schema.
	Body hcl.Body
	// Diags are the block's own problems (its labels).
	Diags hcl.Diagnostics
	// Egress is a sandbox block's egress block, nil when it has none.
	Egress *EgressBlock
}

// Load parses and decodes the config file at path. vars are the --var
// values, env the process environment (os.Environ()) searched for
// SANDDUNE_VAR_<NAME>; --var wins over env, env over defaults. The
// diagnostics returned are the file's own (syntax, variables, duplicate
// blocks); each block keeps its own in Diags.
func Load(path string, vars map[string]string, env []string) (*File, hcl.Diagnostics) {
	f := &File{Path: path, parser: hclparse.NewParser()}
	var diags hcl.Diagnostics
	abs, err := filepath.Abs(path)
	if err != nil {
		return f, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid config path", Detail: err.Error()})
	}
	f.Dir = filepath.Dir(abs)

	src, diags := ReadSource(path)
	if diags.HasErrors() {
		return f, diags
	}
	hf, diags := f.parse(src, path)
	if diags.HasErrors() {
		return f, diags
	}

	content, moreDiags := hf.Body.Content(rootSchema)
	diags = append(diags, moreDiags...)

	var byType = map[string][]*hcl.Block{}
	for _, b := range content.Blocks {
		byType[b.Type] = append(byType[b.Type], b)
	}

	f.Variables, moreDiags = decodeVariables(byType["variable"], vars, env)
	diags = append(diags, moreDiags...)
	f.evalCtx = evalContext(f.Variables, f.Dir)
	f.RequiredPlugins, moreDiags = decodeRequiredPlugins(byType["required_plugins"], f.evalCtx, f.Dir)
	diags = append(diags, moreDiags...)

	seen := map[string]hcl.Range{}
	f.Sandboxes, moreDiags = decodeProviders(sdk.KindSandbox, byType["sandbox"], seen)
	diags = append(diags, moreDiags...)
	for _, s := range f.Sandboxes {
		var eds hcl.Diagnostics
		s.Egress, s.Body, eds = f.splitEgress(s.Body)
		s.Diags = append(s.Diags, eds...)
	}
	f.Agents, moreDiags = decodeProviders(sdk.KindAgent, byType["agent"], seen)
	diags = append(diags, moreDiags...)
	labels := map[string]hcl.Range{}
	f.Runs, moreDiags = f.decodeRuns(byType["run"], labels)
	diags = append(diags, moreDiags...)
	f.runLabels = map[string]hcl.Range{}
	for k, v := range labels {
		f.runLabels[k] = v
	}
	f.Sessions, moreDiags = f.decodeSessions(byType["session"], labels)
	diags = append(diags, moreDiags...)
	f.sessionLabels = map[string]hcl.Range{}
	for k, v := range labels {
		if _, run := f.runLabels[k]; !run {
			f.sessionLabels[k] = v
		}
	}
	f.Pipelines, moreDiags = f.decodePipelines(byType["pipeline"], labels)
	diags = append(diags, moreDiags...)
	for _, r := range f.Runs {
		f.decodeRunBody(r)
	}
	return f, diags
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "required_plugins"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "sandbox", LabelNames: []string{"plugin", "name"}},
		{Type: "agent", LabelNames: []string{"plugin", "name"}},
		{Type: "run", LabelNames: []string{"name"}},
		{Type: "session", LabelNames: []string{"name"}},
		{Type: "pipeline", LabelNames: []string{"name"}},
	},
}

// Block returns the run or provider block with the given address
// ("run.<label>", "sandbox.<plugin>.<name>"), or nil.
func (f *File) Block(addr string) (run *RunBlock, provider *ProviderBlock) {
	for _, r := range f.Runs {
		if "run."+r.Label == addr {
			return r, nil
		}
	}
	for _, p := range append(append([]*ProviderBlock{}, f.Sandboxes...), f.Agents...) {
		if p.Address == addr {
			return nil, p
		}
	}
	return nil, nil
}

// Session returns the session block with the given label, or nil.
func (f *File) Session(label string) *SessionBlock {
	for _, s := range f.Sessions {
		if s.Label == label {
			return s
		}
	}
	return nil
}

// Run returns the run block with the given label, or nil.
func (f *File) Run(label string) *RunBlock {
	for _, r := range f.Runs {
		if r.Label == label {
			return r
		}
	}
	return nil
}

// WriteDiagnostics renders diagnostics with source snippets from the files
// this File parsed. width 0 disables word wrapping.
func (f *File) WriteDiagnostics(w io.Writer, diags hcl.Diagnostics, width uint, color bool) error {
	return WriteDiagnostics(w, f.parser.Files(), diags, width, color)
}

// WriteDiagnostics renders diagnostics with snippets from files (keyed by
// the file names used in the diagnostics' ranges). Each diagnostic with a
// source range starts with its file:line:col, for editors and grep. Past
// MaxShownDiagnostics it says how many more there are.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint, color bool) error {
	dw := hcl.NewDiagnosticTextWriter(w, files, width, color)
	for i, d := range diags {
		if i == MaxShownDiagnostics {
			_, err := fmt.Fprintf(w, "... and %d more diagnostics: fix the ones above first\n", len(diags)-i)
			return err
		}
		if d.Subject != nil {
			s := d.Subject.Start
			if _, err := fmt.Fprintf(w, "%s:%d:%d: ", d.Subject.Filename, s.Line, s.Column); err != nil {
				return err
			}
		}
		if err := dw.WriteDiagnostic(d); err != nil {
			return err
		}
	}
	return nil
}

func isJSON(path string) bool { return strings.HasSuffix(path, ".json") }

// parse parses src, JSON or native syntax by the name's suffix.
func (f *File) parse(src []byte, name string) (*hcl.File, hcl.Diagnostics) {
	if isJSON(name) {
		return f.parser.ParseJSON(src, name)
	}
	return f.parser.ParseHCL(src, name)
}

func errorDiag(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	}
}
