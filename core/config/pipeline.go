package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/missingstudio/sanddune/core/suggest"
	"github.com/zclconf/go-cty/cty"
)

// Pipeline attributes of a run block: depends_on, for_each and
// merge_branches, and what its other attributes reference. An attribute
// that references run.<label> or each (of a for_each over another run's
// result) is dynamic: it is evaluated at run time, once the runs it names
// have completed (RunBlock.Eval); Load decodes the block with a
// placeholder in its place so that everything static is checked at plan
// time.

// RunRef is a reference to a run block: run.<label>.
type RunRef struct {
	Label string
	Range hcl.Range
}

// PipelineBlock is a `pipeline "<label>" { runs = [...], max_parallel = N }`
// block: a name for a set of runs (`sanddune run <label>`) and how many
// of them run at once.
type PipelineBlock struct {
	Label string
	Runs  []RunRef
	// MaxParallel is 0 when unset.
	MaxParallel int
	// TokenBudget is shared by the pipeline's runs; 0 when unset.
	TokenBudget int64
	Diags       hcl.Diagnostics

	DeclRange        hcl.Range
	LabelRange       hcl.Range
	MaxParallelRange hcl.Range
}

// DefaultMaxParallel is a pipeline's max_parallel when unset.
const DefaultMaxParallel = 4

// PipelineBody is the schema of a pipeline block.
type PipelineBody struct {
	Runs        hcl.Expression `hcl:"runs"`
	MaxParallel *int           `hcl:"max_parallel,optional"`
	TokenBudget *int64         `hcl:"token_budget,optional"`
}

// Pipeline returns the pipeline block with the given label, or nil.
func (f *File) Pipeline(label string) *PipelineBlock {
	for _, p := range f.Pipelines {
		if p.Label == label {
			return p
		}
	}
	return nil
}

func (f *File) decodePipelines(blocks []*hcl.Block, taken map[string]hcl.Range) ([]*PipelineBlock, hcl.Diagnostics) {
	var out []*PipelineBlock
	var diags hcl.Diagnostics
	for _, b := range blocks {
		label := b.Labels[0]
		if prev, dup := taken[label]; dup {
			diags = append(diags, errorDiag(b.DefRange, "Duplicate pipeline block", "%q was already declared (a run, a session or a pipeline) at %s: they share one name space.", label, prev))
			continue
		}
		taken[label] = b.DefRange
		p := &PipelineBlock{Label: label, DeclRange: b.DefRange, LabelRange: b.LabelRanges[0], MaxParallelRange: b.DefRange}
		var body PipelineBody
		p.Diags = gohcl.DecodeBody(b.Body, f.evalCtx, &body)
		if body.Runs != nil {
			var more hcl.Diagnostics
			p.Runs, more = f.runRefList(body.Runs, "runs")
			p.Diags = append(p.Diags, more...)
		}
		budgetRange := b.DefRange
		if content, _, _ := b.Body.PartialContent(pipelineSchema); content != nil {
			if a, ok := content.Attributes["max_parallel"]; ok {
				p.MaxParallelRange = a.Expr.Range()
			}
			if a, ok := content.Attributes["token_budget"]; ok {
				budgetRange = a.Expr.Range()
			}
		}
		if body.MaxParallel != nil {
			if p.MaxParallel = *body.MaxParallel; p.MaxParallel < 1 {
				p.Diags = append(p.Diags, errorDiag(p.MaxParallelRange, "Invalid max_parallel", "max_parallel must be at least 1, got %d.", p.MaxParallel))
			}
		}
		if body.TokenBudget != nil {
			if p.TokenBudget = *body.TokenBudget; p.TokenBudget < 1 {
				p.Diags = append(p.Diags, errorDiag(budgetRange, "Invalid token_budget", "token_budget must be at least 1, got %d.", p.TokenBudget))
				p.TokenBudget = 0
			}
		}
		out = append(out, p)
	}
	return out, diags
}

var pipelineSchema, _ = gohcl.ImpliedBodySchema(&PipelineBody{})

// runRefList reads a list of run references, `[run.a, run.b]`, as
// written (no evaluation): depends_on and a pipeline's runs.
func (f *File) runRefList(expr hcl.Expression, attr string) ([]RunRef, hcl.Diagnostics) {
	exprs, diags := hcl.ExprList(expr)
	if diags.HasErrors() {
		return nil, hcl.Diagnostics{errorDiag(expr.Range(), "Invalid "+attr, "%s is a list of run references, such as [run.plan].", attr)}
	}
	var out []RunRef
	for _, e := range exprs {
		tr, ds := hcl.AbsTraversalForExpr(e)
		if ds.HasErrors() || len(tr) != 2 || tr.RootName() != "run" {
			diags = append(diags, errorDiag(e.Range(), "Invalid run reference", "%s takes references like run.<label>.", attr))
			continue
		}
		ref := RunRef{Label: tr[1].(hcl.TraverseAttr).Name, Range: e.Range()}
		if d := f.checkRunLabel(ref); d != nil {
			diags = append(diags, d)
			continue
		}
		out = append(out, ref)
	}
	return out, diags
}

// checkRunLabel says when ref names no run block.
func (f *File) checkRunLabel(ref RunRef) *hcl.Diagnostic {
	if _, ok := f.runLabels[ref.Label]; ok {
		return nil
	}
	if _, ok := f.sessionLabels[ref.Label]; ok {
		return errorDiag(ref.Range, "Reference to a session", "run.%s names a session block: pipelines are made of run blocks.", ref.Label)
	}
	var known []string
	for l := range f.runLabels {
		known = append(known, l)
	}
	sort.Strings(known)
	detail := fmt.Sprintf("No run block %q is declared in this file.", ref.Label)
	if s := suggest.Closest(ref.Label, known); s != "" {
		detail += fmt.Sprintf(" Did you mean run.%s?", s)
	}
	return errorDiag(ref.Range, "Reference to undeclared run", "%s", detail)
}

// Pipeline is what a run block says about its place in a pipeline.
type Pipeline struct {
	// DependsOn are the runs named in depends_on.
	DependsOn []RunRef
	// References are the runs its attributes reference (run.<label>...),
	// each once, in order; they are dependencies too.
	References []RunRef
	// ForEach is the for_each expression, nil when unset; ForEachDynamic
	// says it references another run (it is known at run time only).
	ForEach        hcl.Expression
	ForEachDynamic bool
	// MergeBranches is the merge_branches expression, nil when unset.
	MergeBranches hcl.Expression
	// Dynamic are the attributes evaluated at run time.
	Dynamic map[string]bool
	// Diags are the problems of the pipeline attributes and references
	// (also in the block's Diags).
	Diags hcl.Diagnostics
}

// Needs are the runs this one waits for: depends_on and references, each
// once.
func (p *Pipeline) Needs() []RunRef {
	seen := map[string]bool{}
	var out []RunRef
	for _, r := range append(append([]RunRef{}, p.DependsOn...), p.References...) {
		if !seen[r.Label] {
			seen[r.Label] = true
			out = append(out, r)
		}
	}
	return out
}

// Static says the block is fully known at plan time.
func (p *Pipeline) Static() bool { return len(p.Dynamic) == 0 && !p.ForEachDynamic }

// pipelineAttrs reads depends_on, for_each and merge_branches and the
// references of every attribute of a run block.
func (f *File) pipelineAttrs(r *RunBlock) hcl.Diagnostics {
	p := &r.Pipeline
	p.Dynamic = map[string]bool{}
	var diags hcl.Diagnostics
	if a := r.attrs["depends_on"]; a != nil {
		var more hcl.Diagnostics
		p.DependsOn, more = f.runRefList(a.Expr, "depends_on")
		diags = append(diags, more...)
	}
	if a := r.attrs["for_each"]; a != nil {
		p.ForEach = a.Expr
	}
	if a := r.attrs["merge_branches"]; a != nil {
		p.MergeBranches = a.Expr
	}
	seen := map[string]bool{}
	names := make([]string, 0, len(r.attrs))
	for n := range r.attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	eachAttrs := map[string]bool{}
	for _, name := range names {
		if name == "depends_on" {
			continue
		}
		a := r.attrs[name]
		for _, tr := range a.Expr.Variables() {
			switch tr.RootName() {
			case "run":
				ref, ok := runTraversal(tr)
				if !ok {
					diags = append(diags, errorDiag(tr.SourceRange(), "Invalid run reference", "Expected run.<label>, followed by an attribute of its result (such as run.plan.output or run.implement[0].branch)."))
					continue
				}
				if d := f.checkRunLabel(ref); d != nil {
					diags = append(diags, d)
					continue
				}
				if ref.Label == r.Label {
					diags = append(diags, errorDiag(ref.Range, "Self-reference", "run %q cannot use its own result.", r.Label))
					continue
				}
				p.Dynamic[name] = true
				if !seen[ref.Label] {
					seen[ref.Label] = true
					p.References = append(p.References, ref)
				}
			case "each":
				if name == "for_each" || p.ForEach == nil {
					diags = append(diags, errorDiag(tr.SourceRange(), "each without for_each", "each.key and each.value exist only in a run with for_each (and not in for_each itself)."))
					continue
				}
				if len(tr) < 2 {
					diags = append(diags, errorDiag(tr.SourceRange(), "Invalid each reference", "use each.key or each.value."))
					continue
				}
				if at, ok := tr[1].(hcl.TraverseAttr); !ok || (at.Name != "key" && at.Name != "value") {
					diags = append(diags, errorDiag(tr.SourceRange(), "Invalid each reference", "each has two attributes: key and value."))
					continue
				}
				eachAttrs[name] = true
			}
		}
	}
	p.ForEachDynamic = p.Dynamic["for_each"]
	delete(p.Dynamic, "for_each")
	if p.ForEachDynamic {
		for name := range eachAttrs {
			p.Dynamic[name] = true
		}
	}
	return diags
}

// runTraversal reads run.<label> at the start of a traversal.
func runTraversal(tr hcl.Traversal) (RunRef, bool) {
	if len(tr) < 2 {
		return RunRef{}, false
	}
	a, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return RunRef{}, false
	}
	rng := hcl.RangeBetween(tr[0].SourceRange(), tr[1].SourceRange())
	return RunRef{Label: a.Name, Range: rng}, true
}

// Each is one instance of a for_each run: each.key and each.value.
type Each struct {
	Key   cty.Value
	Value cty.Value
}

// ForEachInstances turns a for_each value into its instances: a list,
// tuple or set gives each.key = its index (a number) and each.value the
// element; a map or object each.key = the key (a string).
func ForEachInstances(v cty.Value) ([]Each, error) {
	switch {
	case v.IsNull():
		return nil, fmt.Errorf("for_each is null")
	case !v.IsWhollyKnown():
		return nil, fmt.Errorf("for_each is not known yet")
	}
	ty := v.Type()
	var out []Each
	switch {
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, e := it.Element()
			out = append(out, Each{Key: cty.NumberIntVal(int64(i)), Value: e})
		}
	case ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out = append(out, Each{Key: k, Value: e})
		}
	default:
		return nil, fmt.Errorf("for_each must be a list or a map, got %s", ty.FriendlyName())
	}
	return out, nil
}

// KeyString is each.key as text: the instance's suffix in names
// (implement-0, implement-api).
func (e Each) KeyString() string {
	if e.Key.Type() == cty.Number {
		return e.Key.AsBigFloat().Text('f', -1)
	}
	return e.Key.AsString()
}

// EvalContext is the context of a run's expressions: the file's (var,
// path) plus run.<label> (the results so far) and each, when set.
func (f *File) EvalContext(runs map[string]cty.Value, each *Each) *hcl.EvalContext {
	ctx := f.evalCtx.NewChild()
	ctx.Variables = map[string]cty.Value{}
	if runs != nil {
		ctx.Variables["run"] = cty.ObjectVal(runs)
	}
	if each != nil {
		ctx.Variables["each"] = cty.ObjectVal(map[string]cty.Value{"key": each.Key, "value": each.Value})
	}
	return ctx
}

// Eval decodes the run block's attributes with runs (run.<label>: the
// results of the runs it needs) and each (nil without for_each): how a
// run with dynamic attributes, or one instance of a for_each run, is
// decoded once they are known.
func (f *File) Eval(r *RunBlock, runs map[string]cty.Value, each *Each) (RunBody, hcl.Diagnostics) {
	var body RunBody
	diags := gohcl.DecodeBody(r.body, f.EvalContext(runs, each), &body)
	return body, diags
}

// PlanBody decodes the block for one instance of a static for_each at
// plan time: each is known, the runs' results are placeholders.
func (f *File) PlanBody(r *RunBlock, each *Each) (RunBody, hcl.Diagnostics) {
	ctx := f.placeholderContext(r)
	ctx.Variables["each"] = cty.ObjectVal(map[string]cty.Value{"key": each.Key, "value": each.Value})
	var body RunBody
	diags := gohcl.DecodeBody(placeholderBody{r.body}, ctx, &body)
	return body, diags
}

// EvalExpr evaluates one of the block's expressions (for_each,
// merge_branches) with runs and each.
func (f *File) EvalExpr(expr hcl.Expression, runs map[string]cty.Value, each *Each) (cty.Value, hcl.Diagnostics) {
	return expr.Value(f.EvalContext(runs, each))
}

// placeholderContext is the plan-time context: every run's result, and
// each of a dynamic for_each, unknown.
func (f *File) placeholderContext(r *RunBlock) *hcl.EvalContext {
	runs := map[string]cty.Value{}
	for l := range f.runLabels {
		runs[l] = cty.DynamicVal
	}
	var each *Each
	if r.Pipeline.ForEach != nil {
		each = &Each{Key: cty.DynamicVal, Value: cty.DynamicVal}
	}
	return f.EvalContext(runs, each)
}

// Placeholder stands for a string known only at run time in the
// plan-time decoding of a block (a branch name, a prompt argument).
const Placeholder = "pending"

// placeholderBody is a run block's body with the unknown parts of its
// top-level attributes replaced: strings (and values of any type inside
// a known collection, such as prompt_args = { ID = each.value.id }) by
// Placeholder, anything else by null (unset), so that gohcl decodes what
// is known.
type placeholderBody struct{ hcl.Body }

func (b placeholderBody) Content(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, diags := b.Body.Content(s)
	return fillContent(c), diags
}

func (b placeholderBody) PartialContent(s *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	c, rest, diags := b.Body.PartialContent(s)
	return fillContent(c), rest, diags
}

func fillContent(c *hcl.BodyContent) *hcl.BodyContent {
	if c == nil {
		return c
	}
	attrs := make(hcl.Attributes, len(c.Attributes))
	for n, a := range c.Attributes {
		attrs[n] = a
		for _, tr := range a.Expr.Variables() {
			if root := tr.RootName(); root == "run" || root == "each" {
				cp := *a
				cp.Expr = placeholderExpr{a.Expr}
				attrs[n] = &cp
				break
			}
		}
	}
	out := *c
	out.Attributes = attrs
	return &out
}

type placeholderExpr struct{ hcl.Expression }

func (e placeholderExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := e.Expression.Value(ctx)
	if diags.HasErrors() || v.IsWhollyKnown() {
		return v, diags
	}
	v, _ = cty.Transform(v, func(path cty.Path, v cty.Value) (cty.Value, error) {
		switch {
		case v.IsKnown():
			return v, nil
		case v.Type() == cty.String || (v.Type() == cty.DynamicPseudoType && len(path) > 0):
			return cty.StringVal(Placeholder), nil
		}
		return cty.NullVal(v.Type()), nil
	})
	return v, diags
}

// ExprText is an expression's source text (for_each in the plan and the
// graph).
func (f *File) ExprText(expr hcl.Expression) string {
	if expr == nil {
		return ""
	}
	rng := expr.Range()
	hf := f.parser.Files()[rng.Filename]
	if hf == nil || rng.End.Byte > len(hf.Bytes) {
		return ""
	}
	return strings.TrimSpace(string(rng.SliceBytes(hf.Bytes)))
}

// EachRanges are the ranges of the block's expressions that reference
// each: the only parts in which one instance of a for_each differs from
// another. A problem elsewhere in the block is the same in every
// instance. In a body that is not native syntax (JSON) every nested
// block counts as one such range.
func (r *RunBlock) EachRanges() []hcl.Range {
	var out []hcl.Range
	refsEach := func(e hcl.Expression) bool {
		for _, tr := range e.Variables() {
			if tr.RootName() == "each" {
				return true
			}
		}
		return false
	}
	// add adds e's range, or, for an object whose keys do not reference
	// each, the ranges of its values that do: in prompt_args = { ID =
	// each.key, MODE = "x" } a problem of MODE is every instance's.
	var add func(e hclsyntax.Expression)
	add = func(e hclsyntax.Expression) {
		obj, ok := e.(*hclsyntax.ObjectConsExpr)
		if !ok || slices.ContainsFunc(obj.Items, func(it hclsyntax.ObjectConsItem) bool { return refsEach(it.KeyExpr) }) {
			out = append(out, e.Range())
			return
		}
		for _, it := range obj.Items {
			if refsEach(it.ValueExpr) {
				add(it.ValueExpr)
			}
		}
	}
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for _, a := range b.Attributes {
			if refsEach(a.Expr) {
				add(a.Expr)
			}
		}
		for _, nb := range b.Blocks {
			walk(nb.Body)
		}
	}
	if b, ok := r.body.(*hclsyntax.Body); ok {
		walk(b)
		return out
	}
	for _, a := range r.attrs {
		if refsEach(a.Expr) {
			out = append(out, a.Expr.Range())
		}
	}
	for _, rng := range r.nested {
		out = append(out, rng)
	}
	return out
}
