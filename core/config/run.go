package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// Run defaults.
const (
	DefaultCompletionSignal  = "<promise>COMPLETE</promise>"
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultCompletionTimeout = 60 * time.Second
	DefaultHookTimeout       = 60 * time.Second
)

// BuiltinPromptArgs are filled by the engine and cannot be set in prompt_args.
var BuiltinPromptArgs = []string{"SOURCE_BRANCH", "TARGET_BRANCH"}

// RunBlock is a decoded `run "<label>"` block.
type RunBlock struct {
	Label   string
	Options core.RunOptions
	// Sandbox and Agent are the referenced provider blocks (nil when the
	// reference is invalid).
	Sandbox *ProviderBlock
	Agent   *ProviderBlock

	DeclRange hcl.Range
	attrs     hcl.Attributes
}

// AttrRange returns the range of a run attribute's value (e.g.
// "resume_session"), or the block's range when the attribute is not set. It
// lets callers attach later diagnostics to the right place.
func (r *RunBlock) AttrRange(name string) hcl.Range {
	if a, ok := r.attrs[name]; ok {
		return a.Expr.Range()
	}
	return r.DeclRange
}

var runSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "sandbox"}, {Name: "agent"}, {Name: "name"}, {Name: "repo"},
		{Name: "prompt"}, {Name: "prompt_file"}, {Name: "prompt_args"},
		{Name: "branch_strategy"}, {Name: "max_iterations"}, {Name: "completion_signal"},
		{Name: "idle_timeout"}, {Name: "completion_timeout"}, {Name: "copy_to_worktree"},
		{Name: "env"}, {Name: "resume_session"}, {Name: "fork_session"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "hooks"}, {Type: "logging"}},
}

type runDecoder struct {
	file    *File
	evalCtx *hcl.EvalContext
	diags   hcl.Diagnostics
}

func (d *runDecoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, errorDiag(rng, summary, format, args...))
}

func (d *runDecoder) decode(blocks []*hcl.Block) []*RunBlock {
	var out []*RunBlock
	labels := map[string]hcl.Range{}
	names := map[string]hcl.Range{}
	for _, b := range blocks {
		label := b.Labels[0]
		if prev, dup := labels[label]; dup {
			d.errorf(b.DefRange, "Duplicate run block", "run %q was already declared at %s.", label, prev)
			continue
		}
		labels[label] = b.DefRange
		r := d.decodeRun(b)
		nameRng := r.AttrRange("name")
		if _, set := r.attrs["name"]; !set {
			nameRng = b.LabelRanges[0]
		}
		if prev, dup := names[r.Options.Name]; dup {
			d.errorf(nameRng, "Duplicate run name", "Another run is already named %q (at %s); run names must be unique.", r.Options.Name, prev)
		}
		names[r.Options.Name] = nameRng
		out = append(out, r)
	}
	return out
}

func (d *runDecoder) decodeRun(b *hcl.Block) *RunBlock {
	r := &RunBlock{Label: b.Labels[0], DeclRange: b.DefRange}
	content, diags := b.Body.Content(runSchema)
	d.diags = append(d.diags, diags...)
	r.attrs = content.Attributes
	o := &r.Options
	*o = core.RunOptions{
		Name:              r.Label,
		BaseDir:           d.file.Dir,
		MaxIterations:     1,
		CompletionSignals: []string{DefaultCompletionSignal},
		IdleTimeout:       DefaultIdleTimeout,
		CompletionTimeout: DefaultCompletionTimeout,
	}
	attrs := content.Attributes

	nameRng := b.LabelRanges[0]
	if d.decodeAttr(attrs, "name", &o.Name) {
		nameRng = attrs["name"].Expr.Range()
	}
	if !validRunName(o.Name) {
		d.errorf(nameRng, "Invalid run name",
			"%q cannot name a run: it becomes part of a branch and a directory name, so use letters, digits, '.', '_' and '-', starting with a letter or digit.", o.Name)
	}

	r.Sandbox = d.reference(attrs, sdk.KindSandbox, d.file.Sandboxes, b)
	r.Agent = d.reference(attrs, sdk.KindAgent, d.file.Agents, b)
	if r.Sandbox != nil {
		o.Sandbox = r.Sandbox.Ref()
	}
	if r.Agent != nil {
		o.Agent = r.Agent.Ref()
	}

	if d.decodeAttr(attrs, "repo", &o.Repo) {
		o.Repo = d.absPath(o.Repo)
	}
	d.decodePrompt(attrs, b, o)
	d.decodeBranchStrategy(attrs, o)

	if d.decodeAttr(attrs, "max_iterations", &o.MaxIterations) && o.MaxIterations < 1 {
		d.errorf(attrs["max_iterations"].Expr.Range(), "Invalid max_iterations", "max_iterations must be at least 1, got %d.", o.MaxIterations)
	}
	d.decodeCompletionSignal(attrs, o)
	if v, ok := d.duration(attrs, "idle_timeout"); ok {
		o.IdleTimeout = v
	}
	if v, ok := d.duration(attrs, "completion_timeout"); ok {
		o.CompletionTimeout = v
	}
	d.decodeCopyToWorktree(attrs, o)
	o.Env = d.stringMap(attrs, "env")
	for k := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			d.errorf(attrs["env"].Expr.Range(), "Invalid env name", "%q is not a valid environment variable name.", k)
		}
	}

	d.decodeAttr(attrs, "resume_session", &o.ResumeSession)
	d.decodeAttr(attrs, "fork_session", &o.ForkSession)
	if o.ForkSession && o.ResumeSession == "" {
		d.errorf(attrs["fork_session"].Expr.Range(), "fork_session needs resume_session", "fork_session forks the session named by resume_session; set resume_session too.")
	}
	if o.ResumeSession != "" && o.MaxIterations > 1 {
		d.errorf(attrs["resume_session"].Expr.Range(), "resume_session needs max_iterations = 1",
			"A resumed session continues one conversation, so the run can have only one iteration; max_iterations is %d.", o.MaxIterations)
	}

	d.decodeHooks(content.Blocks.OfType("hooks"), o)
	d.decodeLogging(content.Blocks.OfType("logging"), o)
	return r
}

var runNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func validRunName(s string) bool {
	return runNameRE.MatchString(s) && !strings.Contains(s, "..") && !strings.HasSuffix(s, ".lock")
}

// reference resolves `sandbox = sandbox.<plugin>.<name>` (likewise agent). A
// run without one uses the file's only block of that kind.
func (d *runDecoder) reference(attrs hcl.Attributes, kind sdk.Kind, blocks []*ProviderBlock, run *hcl.Block) *ProviderBlock {
	attr, ok := attrs[string(kind)]
	if !ok {
		if len(blocks) == 1 {
			return blocks[0]
		}
		d.errorf(run.DefRange, fmt.Sprintf("Missing %s", kind),
			"run %q names no %s and the file declares %d %s blocks; set %s = %s.<plugin>.<name>.", run.Labels[0], kind, len(blocks), kind, kind, kind)
		return nil
	}
	tr, diags := hcl.AbsTraversalForExpr(attr.Expr)
	if diags.HasErrors() || len(tr) != 3 || tr.RootName() != string(kind) {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid %s reference", kind), "Expected a reference like %s.<plugin>.<name>.", kind)
		return nil
	}
	plugin, ok1 := tr[1].(hcl.TraverseAttr)
	name, ok2 := tr[2].(hcl.TraverseAttr)
	if !ok1 || !ok2 {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid %s reference", kind), "Expected a reference like %s.<plugin>.<name>.", kind)
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
	if s := suggest(addr, known); s != "" {
		detail += fmt.Sprintf(" Did you mean %s?", s)
	}
	d.errorf(attr.Expr.Range(), fmt.Sprintf("Reference to undeclared %s", kind), "%s", detail)
	return nil
}

func (d *runDecoder) decodePrompt(attrs hcl.Attributes, b *hcl.Block, o *core.RunOptions) {
	_, hasPrompt := attrs["prompt"]
	_, hasFile := attrs["prompt_file"]
	switch {
	case hasPrompt && hasFile:
		d.errorf(attrs["prompt_file"].NameRange, "Conflicting prompt arguments", "Set exactly one of prompt and prompt_file, not both.")
	case !hasPrompt && !hasFile:
		d.errorf(b.DefRange, "Missing prompt", "run %q needs exactly one of prompt (passed literally) and prompt_file.", b.Labels[0])
	}
	if d.decodeAttr(attrs, "prompt", &o.Prompt) && strings.TrimSpace(o.Prompt) == "" {
		d.errorf(attrs["prompt"].Expr.Range(), "Empty prompt", "The prompt is empty.")
	}
	if d.decodeAttr(attrs, "prompt_file", &o.PromptFile) {
		o.PromptFile = d.absPath(o.PromptFile)
		rng := attrs["prompt_file"].Expr.Range()
		if st, err := os.Stat(o.PromptFile); err != nil {
			d.errorf(rng, "Prompt file not found", "Cannot read prompt_file %s: %s.", o.PromptFile, err)
		} else if st.IsDir() {
			d.errorf(rng, "Prompt file is a directory", "prompt_file %s is a directory.", o.PromptFile)
		}
	}

	attr, ok := attrs["prompt_args"]
	if !ok {
		return
	}
	items, ok := d.objectItems(attr)
	if !ok {
		return
	}
	if hasPrompt {
		d.errorf(attr.NameRange, "prompt_args need prompt_file",
			"An inline prompt is passed literally; prompt_args only fill {{KEY}} placeholders of a prompt_file.")
	}
	o.PromptArgs = map[string]string{}
	for _, it := range items {
		for _, builtin := range BuiltinPromptArgs {
			if it.key == builtin {
				d.errorf(it.keyRange, "Built-in prompt argument", "%s is set by sanddune to the real branch name and cannot be overridden in prompt_args.", builtin)
			}
		}
		if s, ok := d.toString(it.value, it.valueRange, "prompt_args."+it.key); ok {
			o.PromptArgs[it.key] = s
		}
	}
}

var strategyKeys = []string{"type", "branch", "base_branch"}

// decodeBranchStrategy reads `branch_strategy = { type = "...", branch =
// "...", base_branch = "..." }`, or just the type as a string.
func (d *runDecoder) decodeBranchStrategy(attrs hcl.Attributes, o *core.RunOptions) {
	attr, ok := attrs["branch_strategy"]
	if !ok {
		return
	}
	rng := attr.Expr.Range()
	var typeRng hcl.Range
	bs := core.BranchStrategy{}
	val, diags := attr.Expr.Value(d.evalCtx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || val.IsNull() || !val.IsWhollyKnown() {
		return
	}
	set := map[string]bool{}
	if val.Type() == cty.String {
		bs.Type, typeRng = core.StrategyType(val.AsString()), rng
		set["type"] = true
	} else {
		items, ok := d.objectItems(attr)
		if !ok {
			return
		}
		for _, it := range items {
			s, ok := d.toString(it.value, it.valueRange, "branch_strategy."+it.key)
			if !ok {
				continue
			}
			set[it.key] = true
			switch it.key {
			case "type":
				bs.Type, typeRng = core.StrategyType(s), it.valueRange
			case "branch":
				bs.Branch = s
			case "base_branch":
				bs.BaseBranch = s
			default:
				detail := fmt.Sprintf("branch_strategy has no key %q; it takes type, branch and base_branch.", it.key)
				if sug := suggest(it.key, strategyKeys); sug != "" {
					detail += fmt.Sprintf(" Did you mean %q?", sug)
				}
				d.errorf(it.keyRange, "Unsupported branch_strategy key", "%s", detail)
			}
		}
	}
	switch bs.Type {
	case core.StrategyHead, core.StrategyMergeToHead, core.StrategyBranch:
	case "":
		if !set["type"] {
			d.errorf(rng, "Missing branch strategy type", `branch_strategy needs type = "head", "merge-to-head" or "branch".`)
			return
		}
		fallthrough
	default:
		d.errorf(typeRng, "Invalid branch strategy type", `%q is not a branch strategy; use "head", "merge-to-head" or "branch".`, bs.Type)
		return
	}
	if bs.Type == core.StrategyBranch && strings.TrimSpace(bs.Branch) == "" {
		d.errorf(rng, "Missing branch", `The branch strategy needs branch = "<name>": the branch the agent's commits go to.`)
	}
	if bs.Type != core.StrategyBranch && (set["branch"] || set["base_branch"]) {
		d.errorf(rng, "Unexpected branch", "branch and base_branch apply only to type = \"branch\", not %q.", bs.Type)
	}
	o.BranchStrategy = bs
}

func (d *runDecoder) decodeCompletionSignal(attrs hcl.Attributes, o *core.RunOptions) {
	val, attr, ok := d.value(attrs, "completion_signal")
	if !ok {
		return
	}
	rng := attr.Expr.Range()
	var sigs []string
	if val.Type() == cty.String {
		sigs = []string{val.AsString()}
	} else if !d.convert(val, rng, "completion_signal", &sigs) {
		return
	}
	if len(sigs) == 0 {
		d.errorf(rng, "Empty completion_signal", "completion_signal needs at least one signal.")
		return
	}
	for _, s := range sigs {
		if s == "" {
			d.errorf(rng, "Empty completion signal", "An empty completion signal would match any output.")
			return
		}
	}
	o.CompletionSignals = sigs
}

func (d *runDecoder) decodeCopyToWorktree(attrs hcl.Attributes, o *core.RunOptions) {
	var paths []string
	if !d.decodeAttr(attrs, "copy_to_worktree", &paths) {
		return
	}
	rng := attrs["copy_to_worktree"].Expr.Range()
	for _, p := range paths {
		clean := filepath.Clean(p)
		switch {
		case p == "":
			d.errorf(rng, "Invalid copy_to_worktree path", "An empty path is not allowed.")
		case filepath.IsAbs(p):
			d.errorf(rng, "Invalid copy_to_worktree path", "%q is absolute; copy_to_worktree paths are relative to the repository root.", p)
		case clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)):
			d.errorf(rng, "Invalid copy_to_worktree path", "%q leaves the repository; copy_to_worktree paths must stay inside it.", p)
		case clean == ".":
			d.errorf(rng, "Invalid copy_to_worktree path", "%q names the whole repository.", p)
		default:
			o.CopyToWorktree = append(o.CopyToWorktree, clean)
		}
	}
}

var (
	hooksSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "host"}, {Type: "sandbox"}}}
	hostSchema  = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "on_worktree_ready"}, {Type: "on_sandbox_ready"}}}
	sboxSchema  = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "on_sandbox_ready"}}}
	hostHook    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "command", Required: true}, {Name: "timeout"}}}
	sandboxHook = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "command", Required: true}, {Name: "timeout"}, {Name: "sudo"}}}
)

func (d *runDecoder) decodeHooks(blocks hcl.Blocks, o *core.RunOptions) {
	hooks := d.single(blocks)
	if hooks == nil {
		return
	}
	content, diags := hooks.Body.Content(hooksSchema)
	d.diags = append(d.diags, diags...)
	if host := d.single(content.Blocks.OfType("host")); host != nil {
		c, diags := host.Body.Content(hostSchema)
		d.diags = append(d.diags, diags...)
		o.Hooks.HostOnWorktreeReady = d.hookList(c.Blocks.OfType("on_worktree_ready"), hostHook)
		o.Hooks.HostOnSandboxReady = d.hookList(c.Blocks.OfType("on_sandbox_ready"), hostHook)
	}
	if sb := d.single(content.Blocks.OfType("sandbox")); sb != nil {
		c, diags := sb.Body.Content(sboxSchema)
		d.diags = append(d.diags, diags...)
		o.Hooks.SandboxOnSandboxReady = d.hookList(c.Blocks.OfType("on_sandbox_ready"), sandboxHook)
	}
}

func (d *runDecoder) hookList(blocks hcl.Blocks, schema *hcl.BodySchema) []core.Hook {
	var out []core.Hook
	for _, b := range blocks {
		c, diags := b.Body.Content(schema)
		d.diags = append(d.diags, diags...)
		h := core.Hook{Timeout: DefaultHookTimeout}
		if d.decodeAttr(c.Attributes, "command", &h.Command) && strings.TrimSpace(h.Command) == "" {
			d.errorf(c.Attributes["command"].Expr.Range(), "Empty hook command", "A hook needs a command.")
		}
		if v, ok := d.duration(c.Attributes, "timeout"); ok {
			h.Timeout = v
		}
		d.decodeAttr(c.Attributes, "sudo", &h.Sudo)
		out = append(out, h)
	}
	return out
}

var loggingSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "path"}}}

func (d *runDecoder) decodeLogging(blocks hcl.Blocks, o *core.RunOptions) {
	b := d.single(blocks)
	if b == nil {
		return
	}
	c, diags := b.Body.Content(loggingSchema)
	d.diags = append(d.diags, diags...)
	o.Logging.Mode = core.LogFile
	var mode string
	if d.decodeAttr(c.Attributes, "type", &mode) {
		switch core.LogMode(mode) {
		case core.LogFile, core.LogStdout:
			o.Logging.Mode = core.LogMode(mode)
		default:
			d.errorf(c.Attributes["type"].Expr.Range(), "Invalid logging type", `%q is not a logging type; use "file" or "stdout".`, mode)
		}
	}
	if d.decodeAttr(c.Attributes, "path", &o.Logging.Path) {
		if o.Logging.Mode != core.LogFile {
			d.errorf(c.Attributes["path"].NameRange, "Unexpected logging path", `path applies only to type = "file".`)
		}
		o.Logging.Path = d.absPath(o.Logging.Path)
	}
}

// single returns the only block of a list, reporting any extra ones.
func (d *runDecoder) single(blocks hcl.Blocks) *hcl.Block {
	if len(blocks) == 0 {
		return nil
	}
	for _, b := range blocks[1:] {
		d.errorf(b.DefRange, fmt.Sprintf("Duplicate %s block", b.Type), "Only one %s block is allowed here; the first is at %s.", b.Type, blocks[0].DefRange)
	}
	return blocks[0]
}

func (d *runDecoder) absPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(d.file.Dir, p)
}

// value evaluates an attribute; ok is false when it is absent, null or
// failed to evaluate (the failure is reported).
func (d *runDecoder) value(attrs hcl.Attributes, name string) (cty.Value, *hcl.Attribute, bool) {
	attr, ok := attrs[name]
	if !ok {
		return cty.NilVal, nil, false
	}
	val, diags := attr.Expr.Value(d.evalCtx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || val.IsNull() || !val.IsWhollyKnown() {
		return cty.NilVal, attr, false
	}
	return val, attr, true
}

// decodeAttr decodes an attribute into target (a pointer to a Go value that
// gocty understands); it reports whether the attribute was set and valid.
func (d *runDecoder) decodeAttr(attrs hcl.Attributes, name string, target any) bool {
	val, attr, ok := d.value(attrs, name)
	if !ok {
		return false
	}
	return d.convert(val, attr.Expr.Range(), name, target)
}

func (d *runDecoder) convert(val cty.Value, rng hcl.Range, name string, target any) bool {
	ty, err := gocty.ImpliedType(target)
	if err == nil {
		var conv cty.Value
		if conv, err = convert.Convert(val, ty); err == nil {
			err = gocty.FromCtyValue(conv, target)
		}
	}
	if err != nil {
		d.errorf(rng, "Incorrect attribute value type", "Inappropriate value for attribute %q: %s.", name, err)
		return false
	}
	return true
}

func (d *runDecoder) duration(attrs hcl.Attributes, name string) (time.Duration, bool) {
	var s string
	if !d.decodeAttr(attrs, name, &s) {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		d.errorf(attrs[name].Expr.Range(), "Invalid duration", `%s must be a positive duration such as "90s", "10m" or "1h30m", got %q.`, name, s)
		return 0, false
	}
	return v, true
}

func (d *runDecoder) toString(v cty.Value, rng hcl.Range, name string) (string, bool) {
	var s string
	return s, d.convert(v, rng, name, &s)
}

func (d *runDecoder) stringMap(attrs hcl.Attributes, name string) map[string]string {
	attr, ok := attrs[name]
	if !ok {
		return nil
	}
	items, ok := d.objectItems(attr)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, it := range items {
		if s, ok := d.toString(it.value, it.valueRange, name+"."+it.key); ok {
			out[it.key] = s
		}
	}
	return out
}

type objectItem struct {
	key        string
	keyRange   hcl.Range
	value      cty.Value
	valueRange hcl.Range
}

// objectItems evaluates an object-valued attribute item by item, keeping the
// source range of each key when the value is written as a literal.
func (d *runDecoder) objectItems(attr *hcl.Attribute) ([]objectItem, bool) {
	var items []objectItem
	if pairs, diags := hcl.ExprMap(attr.Expr); !diags.HasErrors() {
		seen := map[string]bool{}
		ok := true
		for _, kv := range pairs {
			k, diags := kv.Key.Value(d.evalCtx)
			d.diags = append(d.diags, diags...)
			v, vdiags := kv.Value.Value(d.evalCtx)
			d.diags = append(d.diags, vdiags...)
			if diags.HasErrors() || vdiags.HasErrors() || !v.IsWhollyKnown() {
				ok = false
				continue
			}
			key, kok := d.toString(k, kv.Key.Range(), attr.Name+" key")
			if !kok {
				ok = false
				continue
			}
			if seen[key] {
				d.errorf(kv.Key.Range(), "Duplicate key", "%s sets %q twice.", attr.Name, key)
				ok = false
				continue
			}
			seen[key] = true
			items = append(items, objectItem{key, kv.Key.Range(), v, kv.Value.Range()})
		}
		return items, ok
	}
	val, diags := attr.Expr.Value(d.evalCtx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || val.IsNull() || !val.IsWhollyKnown() {
		return nil, false
	}
	rng := attr.Expr.Range()
	if !val.Type().IsObjectType() && !val.Type().IsMapType() {
		d.errorf(rng, "Incorrect attribute value type", "Inappropriate value for attribute %q: an object is required.", attr.Name)
		return nil, false
	}
	for it := val.ElementIterator(); it.Next(); {
		k, v := it.Element()
		items = append(items, objectItem{k.AsString(), rng, v, rng})
	}
	return items, true
}

// suggest returns the option closest to given, or "" when none is close.
func suggest(given string, options []string) string {
	best, bestDist := "", 3
	for _, o := range options {
		if dist := levenshtein.Distance(given, o, nil); dist < bestDist {
			best, bestDist = o, dist
		}
	}
	return best
}
