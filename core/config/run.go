package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/suggest"
	"github.com/missingstudio/sanddune/sdk"
)

// RunBlock is a decoded `run "<label>"` block.
type RunBlock struct {
	Label string
	// Sandbox and Agent are the referenced provider blocks (nil when the
	// reference is invalid; a run without one uses the file's only block of
	// that kind).
	Sandbox *ProviderBlock
	Agent   *ProviderBlock
	// NoSandbox is `sandbox = "none"`: no sandbox, the host (interactive
	// sessions only; the planner refuses it elsewhere). Sandbox is nil.
	NoSandbox bool
	Body      RunBody
	// Diags are the block's own problems (decoding, references).
	Diags hcl.Diagnostics
	// Pipeline is what the block says about its place in a pipeline.
	Pipeline Pipeline

	DeclRange  hcl.Range
	LabelRange hcl.Range
	attrs      hcl.Attributes
	nested     map[string]hcl.Range
	body       hcl.Body
}

// RunBody is the schema of a run block, decoded with gohcl. Values are as
// written: durations are strings, branch_strategy and completion_signal
// take more than one shape (core.Plan converts and checks them).
type RunBody struct {
	Sandbox           *hcl.Attribute    `hcl:"sandbox,optional"`
	Agent             *hcl.Attribute    `hcl:"agent,optional"`
	AllowUnconfined   *bool             `hcl:"allow_unconfined,optional"`
	Name              *string           `hcl:"name,optional"`
	Repo              *string           `hcl:"repo,optional"`
	Prompt            *string           `hcl:"prompt,optional"`
	PromptFile        *string           `hcl:"prompt_file,optional"`
	PromptArgs        map[string]string `hcl:"prompt_args,optional"`
	BranchStrategy    cty.Value         `hcl:"branch_strategy,optional"` // a type, or {type, branch, base_branch}
	MaxIterations     *int              `hcl:"max_iterations,optional"`
	TokenBudget       *int64            `hcl:"token_budget,optional"`
	CompletionSignal  cty.Value         `hcl:"completion_signal,optional"` // a string or a list of strings
	IdleTimeout       *string           `hcl:"idle_timeout,optional"`
	CompletionTimeout *string           `hcl:"completion_timeout,optional"`
	CopyToWorktree    []string          `hcl:"copy_to_worktree,optional"`
	Env               map[string]string `hcl:"env,optional"`
	ShowEnv           []string          `hcl:"show_env,optional"`
	ResumeSession     *string           `hcl:"resume_session,optional"`
	ForkSession       *bool             `hcl:"fork_session,optional"`
	Hooks             *HooksBlock       `hcl:"hooks,block"`
	Logging           *LoggingBlock     `hcl:"logging,block"`
	Timeouts          *TimeoutsBlock    `hcl:"timeouts,block"`
	Output            *OutputBlock      `hcl:"output,block"`

	// Pipelines (core/config/pipeline.go): evaluated by the planner.
	DependsOn       *hcl.Attribute `hcl:"depends_on,optional"`
	ForEach         *hcl.Attribute `hcl:"for_each,optional"`
	MergeBranches   *hcl.Attribute `hcl:"merge_branches,optional"`
	OnMergeConflict *string        `hcl:"on_merge_conflict,optional"`
}

// OutputBlock is `output { tag = "plan", schema = file("plan.schema.json") }`
// or `output { tag = "summary", type = "string" }`: the run's structured
// output (core.Plan checks it).
type OutputBlock struct {
	Tag  string  `hcl:"tag"`
	Type *string `hcl:"type,optional"`
	// Schema is JSON Schema text, or the schema written as an HCL object.
	Schema    cty.Value `hcl:"schema,optional"`
	DeclRange hcl.Range `hcl:",def_range"`
	attrs     hcl.Attributes
}

// outputBlock keeps the attributes of the output block in c, the
// content of its run or step, for AttrRange.
func outputBlock(o *OutputBlock, c *hcl.BodyContent) {
	if o == nil {
		return
	}
	if bs := c.Blocks.OfType("output"); len(bs) > 0 {
		o.attrs, _ = bs[0].Body.JustAttributes()
	}
}

// rangeIn is the range of path in a block: its output block's
// attributes ("output.schema"), else as attrRange.
func rangeIn(attrs hcl.Attributes, out *OutputBlock, path string, decl hcl.Range, blocks map[string]*hcl.Range) hcl.Range {
	if blocks == nil {
		blocks = map[string]*hcl.Range{}
	}
	if out != nil {
		if rest, ok := strings.CutPrefix(path, "output."); ok {
			return attrRange(out.attrs, rest, out.DeclRange, nil)
		}
		blocks["output"] = &out.DeclRange
	}
	return attrRange(attrs, path, decl, blocks)
}

// TimeoutsBlock is `timeouts { create_sandbox = "5m" ... }`: durations of
// the lifecycle steps, by name (core.Plan checks the names against
// run.Timeouts).
type TimeoutsBlock struct {
	Durations map[string]string `hcl:",remain"`
	DeclRange hcl.Range         `hcl:",def_range"`
}

// HooksBlock is `hooks { host { ... } sandbox { ... } }`.
type HooksBlock struct {
	Host      *HostHooks    `hcl:"host,block"`
	Sandbox   *SandboxHooks `hcl:"sandbox,block"`
	DeclRange hcl.Range     `hcl:",def_range"`
}

// HostHooks are the hooks that run on the host.
type HostHooks struct {
	OnWorktreeReady []HookBlock `hcl:"on_worktree_ready,block"`
	OnSandboxReady  []HookBlock `hcl:"on_sandbox_ready,block"`
}

// SandboxHooks are the hooks that run inside the sandbox.
type SandboxHooks struct {
	OnSandboxReady []SandboxHookBlock `hcl:"on_sandbox_ready,block"`
}

// HookBlock is one host hook.
type HookBlock struct {
	Command string  `hcl:"command"`
	Timeout *string `hcl:"timeout,optional"`
}

// SandboxHookBlock is one sandbox hook.
type SandboxHookBlock struct {
	Command string  `hcl:"command"`
	Timeout *string `hcl:"timeout,optional"`
	Sudo    *bool   `hcl:"sudo,optional"`
}

// LoggingBlock is `logging { type = "file" | "stdout", path = "..." }`.
type LoggingBlock struct {
	Type      *string   `hcl:"type,optional"`
	Path      *string   `hcl:"path,optional"`
	DeclRange hcl.Range `hcl:",def_range"`
}

// Name is the run's name: its name attribute, else its label.
func (r *RunBlock) Name() string {
	if r.Body.Name != nil {
		return *r.Body.Name
	}
	return r.Label
}

// AttrRange returns the range of a run attribute path (e.g.
// "resume_session", "branch_strategy.type", "prompt_args.KEY", "hooks",
// "hooks.sandbox.on_sandbox_ready[0].sudo", "logging"),
// or the block's range when the attribute is not set. It lets the planner
// attach its diagnostics to the right place.
func (r *RunBlock) AttrRange(path string) hcl.Range {
	if rng, ok := r.nested[path]; ok {
		return rng
	}
	return rangeIn(r.attrs, r.Body.Output, path, r.DeclRange, map[string]*hcl.Range{
		"name": &r.LabelRange, "hooks": hooksRange(r.Body.Hooks), "logging": loggingRange(r.Body.Logging), "timeouts": timeoutsRange(r.Body.Timeouts),
	})
}

// attrRange is the range of an attribute path in a block's attrs; blocks
// holds the ranges of nested blocks (and of the label, for "name") used
// when no attribute of that name is set; decl is the block's range.
func attrRange(attrs hcl.Attributes, path string, decl hcl.Range, blocks map[string]*hcl.Range) hcl.Range {
	name, rest, _ := strings.Cut(path, ".")
	a, ok := attrs[name]
	if b := blocks[name]; !ok && b != nil {
		return *b
	}
	switch {
	case !ok:
		return decl
	case rest == "":
		return a.Expr.Range()
	}
	return exprRange(a.Expr, strings.Split(rest, "."))
}

// nestedRanges are the ranges in the nested blocks of a run or session
// body: of the hooks ("hooks.sandbox.on_sandbox_ready[0]", as
// run.Hooks.All names them), of their attributes
// ("hooks.sandbox.on_sandbox_ready[0].sudo") and of the timeouts
// ("timeouts.create_sandbox").
func nestedRanges(body hcl.Body) map[string]hcl.Range {
	out := map[string]hcl.Range{}
	blocks := func(b hcl.Body, types ...string) hcl.Blocks {
		schema := &hcl.BodySchema{}
		for _, t := range types {
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: t})
		}
		content, _, _ := b.PartialContent(schema)
		return content.Blocks
	}
	for _, tb := range blocks(body, "timeouts") {
		attrs, _ := tb.Body.JustAttributes()
		for name, a := range attrs {
			out["timeouts."+name] = a.Expr.Range()
		}
	}
	for _, hb := range blocks(body, "hooks") {
		for _, where := range blocks(hb.Body, "host", "sandbox") {
			n := map[string]int{}
			for _, h := range blocks(where.Body, "on_worktree_ready", "on_sandbox_ready") {
				path := fmt.Sprintf("hooks.%s.%s[%d]", where.Type, h.Type, n[h.Type])
				n[h.Type]++
				out[path] = h.DefRange
				attrs, _ := h.Body.JustAttributes()
				for name, a := range attrs {
					out[path+"."+name] = a.Expr.Range()
				}
			}
		}
	}
	return out
}

func hooksRange(b *HooksBlock) *hcl.Range {
	if b == nil {
		return nil
	}
	return &b.DeclRange
}

// timeoutsRange is the range of the timeouts block (its attributes are
// in nestedRanges).
func timeoutsRange(b *TimeoutsBlock) *hcl.Range {
	if b == nil {
		return nil
	}
	return &b.DeclRange
}

func loggingRange(b *LoggingBlock) *hcl.Range {
	if b == nil {
		return nil
	}
	return &b.DeclRange
}

var runSchema, _ = gohcl.ImpliedBodySchema(&RunBody{})

func (f *File) decodeRuns(blocks []*hcl.Block, labels map[string]hcl.Range) ([]*RunBlock, hcl.Diagnostics) {
	var out []*RunBlock
	var diags hcl.Diagnostics
	for _, b := range blocks {
		label := b.Labels[0]
		if prev, dup := labels[label]; dup {
			diags = append(diags, errorDiag(b.DefRange, "Duplicate run block", "run %q was already declared at %s.", label, prev))
			continue
		}
		labels[label] = b.DefRange
		r := &RunBlock{Label: label, DeclRange: b.DefRange, LabelRange: b.LabelRanges[0], body: b.Body}
		content, _, _ := b.Body.PartialContent(runSchema)
		r.attrs = content.Attributes
		r.nested = nestedRanges(b.Body)
		out = append(out, r)
	}
	return out, diags
}

// decodeRunBody decodes a run block once every block label is known: its
// pipeline attributes, then its body, with placeholders where a value
// is known at run time only.
func (f *File) decodeRunBody(r *RunBlock) {
	r.Pipeline.Diags = f.pipelineAttrs(r)
	r.Diags = append(hcl.Diagnostics{}, r.Pipeline.Diags...)
	r.Diags = append(r.Diags, gohcl.DecodeBody(placeholderBody{r.body}, f.placeholderContext(r), &r.Body)...)
	content, _, _ := r.body.PartialContent(runSchema)
	outputBlock(r.Body.Output, content)
	if r.NoSandbox = isNone(r.Body.Sandbox); !r.NoSandbox {
		r.Sandbox = r.reference(r.Body.Sandbox, sdk.KindSandbox, f.Sandboxes)
	}
	r.Agent = r.reference(r.Body.Agent, sdk.KindAgent, f.Agents)
}

// isNone reports `sandbox = "none"`.
func isNone(attr *hcl.Attribute) bool {
	if attr == nil {
		return false
	}
	v, diags := attr.Expr.Value(nil)
	return !diags.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() && v.AsString() == "none"
}

// reference resolves `sandbox = sandbox.<plugin>.<name>` (likewise agent). A
// run without one uses the file's only block of that kind.
func (r *RunBlock) reference(attr *hcl.Attribute, kind sdk.Kind, blocks []*ProviderBlock) *ProviderBlock {
	if attr == nil {
		if len(blocks) == 1 {
			return blocks[0]
		}
		r.Diags = append(r.Diags, errorDiag(r.DeclRange, fmt.Sprintf("Missing %s", kind),
			"run %q names no %s and the file declares %d %s blocks; set %s = %s.<plugin>.<name>.", r.Label, kind, len(blocks), kind, kind, kind))
		return nil
	}
	invalid := errorDiag(attr.Expr.Range(), fmt.Sprintf("Invalid %s reference", kind), "Expected a reference like %s.<plugin>.<name>.", kind)
	tr, diags := hcl.AbsTraversalForExpr(attr.Expr)
	if diags.HasErrors() || len(tr) != 3 || tr.RootName() != string(kind) {
		r.Diags = append(r.Diags, invalid)
		return nil
	}
	plugin, ok1 := tr[1].(hcl.TraverseAttr)
	name, ok2 := tr[2].(hcl.TraverseAttr)
	if !ok1 || !ok2 {
		r.Diags = append(r.Diags, invalid)
		return nil
	}
	addr := fmt.Sprintf("%s.%s.%s", kind, plugin.Name, name.Name)
	var known []string
	for _, p := range blocks {
		if p.Address == addr {
			return p
		}
		known = append(known, p.Address)
	}
	detail := fmt.Sprintf("No %s block %q is declared in this file.", kind, addr)
	if s := suggest.Closest(addr, known); s != "" {
		detail += fmt.Sprintf(" Did you mean %s?", s)
	}
	r.Diags = append(r.Diags, errorDiag(attr.Expr.Range(), fmt.Sprintf("Reference to undeclared %s", kind), "%s", detail))
	return nil
}
