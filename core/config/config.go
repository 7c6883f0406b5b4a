// Package config turns a sanddune HCL file into validated run configuration.
//
// Load decodes in phases, the way Packer and Nomad do: the root schema
// (variable, sandbox, agent and run blocks), then the variables (defaults <
// SANDDUNE_VAR_<NAME> env < --var), then each provider block against the
// schema its plugin declares (fetched through a SchemaSource), then the run
// blocks into core.RunOptions. Every problem is an hcl.Diagnostic with a
// source range, reported before any plugin is asked to do work; render them
// with File.WriteDiagnostics.
//
// After Load, the caller configures each provider (Configure) and maps the
// plugin's sdk.Diagnostics back to source with ProviderBlock.MapDiagnostics.
// What depends on the providers and the repository (the branch strategy
// against the sandbox's contract and the host branch, the prompt template,
// env layers) is checked by core.Check.
package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// ErrUnknownPlugin is wrapped by SchemaSource errors when no plugin of the
// requested kind and name is installed.
var ErrUnknownPlugin = errors.New("unknown plugin")

// SchemaSource gives the config schema and info of plugin components; the
// plugin host implements it.
type SchemaSource interface {
	// Schema returns the schema and info of the named plugin of a kind. The
	// error wraps ErrUnknownPlugin when no such plugin is installed.
	Schema(ctx context.Context, kind sdk.Kind, plugin string) (sdk.Schema, sdk.Info, error)
}

// File is a decoded config file. Load returns one even when it reports
// errors, so that its diagnostics can be rendered; only a File loaded without
// error diagnostics is fit to run.
type File struct {
	// Path is the file as given to Load; Dir is its absolute directory.
	Path string
	Dir  string

	Variables []*Variable
	Sandboxes []*ProviderBlock
	Agents    []*ProviderBlock
	// Runs are in file order.
	Runs []*RunBlock

	parser *hclparse.Parser
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
// `agent "<plugin>" "<name>"` block decoded against its plugin's schema.
type ProviderBlock struct {
	Kind    sdk.Kind
	Plugin  string
	Name    string
	Address string // e.g. "sandbox.docker.default"
	// Info and Schema are what the SchemaSource returned (zero when the
	// plugin is unknown).
	Info   sdk.Info
	Schema sdk.Schema
	Config sdk.Config

	DeclRange hcl.Range
	// PluginRange is the range of the plugin (type) label.
	PluginRange hcl.Range

	body hcl.Body
}

// Ref returns the block as a core.ProviderRef, without Provider (the caller
// dispenses it).
func (p *ProviderBlock) Ref() core.ProviderRef {
	return core.ProviderRef{Address: p.Address, Plugin: p.Plugin, Config: p.Config}
}

// Load parses and decodes the config file at path. vars are the --var
// values, env the process environment (os.Environ()) searched for
// SANDDUNE_VAR_<NAME>; --var wins over env, env over defaults. A nil
// schemas treats every plugin as unknown.
func Load(ctx context.Context, path string, vars map[string]string, env []string, schemas SchemaSource) (*File, hcl.Diagnostics) {
	f := &File{Path: path, parser: hclparse.NewParser()}
	var diags hcl.Diagnostics
	abs, err := filepath.Abs(path)
	if err != nil {
		return f, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid config path", Detail: err.Error()})
	}
	f.Dir = filepath.Dir(abs)

	var hf *hcl.File
	if isJSON(path) {
		hf, diags = f.parser.ParseJSONFile(path)
	} else {
		hf, diags = f.parser.ParseHCLFile(path)
	}
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
	evalCtx := evalContext(f.Variables, f.Dir)

	pd := &providerDecoder{ctx: ctx, schemas: schemas, evalCtx: evalCtx, seen: map[string]hcl.Range{}, cache: map[string]component{}}
	f.Sandboxes = pd.decode(sdk.KindSandbox, byType["sandbox"])
	f.Agents = pd.decode(sdk.KindAgent, byType["agent"])
	diags = append(diags, pd.diags...)

	rd := &runDecoder{file: f, evalCtx: evalCtx}
	f.Runs = rd.decode(byType["run"])
	diags = append(diags, rd.diags...)
	return f, diags
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "sandbox", LabelNames: []string{"plugin", "name"}},
		{Type: "agent", LabelNames: []string{"plugin", "name"}},
		{Type: "run", LabelNames: []string{"name"}},
	},
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
// source range starts with its file:line:col, for editors and grep.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, width uint, color bool) error {
	dw := hcl.NewDiagnosticTextWriter(w, files, width, color)
	for _, d := range diags {
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

func errorDiag(rng hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	}
}
