package planning

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/prompt"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/suggest"
	"github.com/missingstudio/sanddune/core/worktree"
)

// Values gives the values of a run block written in HCL their Go types:
// durations, branch_strategy, completion_signal, hooks and logging. The
// problems it finds are in Diags; a value it cannot read is left unset
// (its default), so that it is reported once, here.
type Values struct {
	Block string // the run block's address
	Diags Diagnostics
}

func (v *Values) bad(attr, summary, format string, args ...any) {
	v.Diags = append(v.Diags, Diagnostic{Severity: Error, Block: v.Block, Attribute: attr, Summary: summary, Detail: fmt.Sprintf(format, args...)})
}

// Duration parses a duration attribute; absent is 0. Text that is not a
// positive duration is reported here and read as absent, so that no later
// check reports it again.
func (v *Values) Duration(attr string, s *string) time.Duration {
	if s == nil {
		return 0
	}
	d, err := time.ParseDuration(*s)
	if err != nil || d <= 0 {
		v.bad(attr, "Invalid duration", `%s must be a positive duration such as "90s", "10m" or "1h30m", got %q.`, attr, *s)
		return 0
	}
	return d
}

// promptArgs returns args without the keys no placeholder can name ("a b"),
// each reported here, at its key.
func (v *Values) promptArgs(args map[string]string) map[string]string {
	var out map[string]string
	for k, val := range args {
		if !prompt.ValidArgName(k) {
			v.bad("prompt_args."+k, "Invalid prompt argument name",
				"prompt argument %q can never be used: a placeholder is {{NAME}}, with a name of letters, digits and underscores that does not start with a digit.", k)
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = val
	}
	return out
}

// Timeouts reads the timeouts block: a duration for each step it names.
func (v *Values) Timeouts(b *config.TimeoutsBlock) run.Timeouts {
	var t run.Timeouts
	steps := t.Steps()
	var names []string
	for _, st := range steps {
		names = append(names, st.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(b.Durations)) {
		d := b.Durations[name]
		i := slices.Index(names, name)
		if i < 0 {
			detail := fmt.Sprintf("timeouts has no step %q; it takes %s.", name, strings.Join(names, ", "))
			if sug := suggest.Closest(name, names); sug != "" {
				detail += fmt.Sprintf(" Did you mean %q?", sug)
			}
			v.bad("timeouts."+name, "Unsupported timeout", "%s", detail)
			continue
		}
		*steps[i].Duration = v.Duration("timeouts."+name, &d)
	}
	return t
}

// Signals reads completion_signal: a string or a non-empty list of them.
func (v *Values) Signals(val cty.Value) []string {
	if val == cty.NilVal || val.IsNull() {
		return nil
	}
	if val.Type() == cty.String {
		return []string{val.AsString()}
	}
	var out []string
	if l, err := convert.Convert(val, cty.List(cty.String)); err != nil || l.LengthInt() == 0 || gocty.FromCtyValue(l, &out) != nil {
		v.bad("completion_signal", "Invalid completion_signal", "completion_signal must be a string or a non-empty list of strings.")
		return nil
	}
	return out
}

// Strategy reads `branch_strategy = "<type>"` or `{ type, branch,
// base_branch }`; worktree.Resolve checks the combination.
func (v *Values) Strategy(val cty.Value) worktree.Strategy {
	var s worktree.Strategy
	switch {
	case val == cty.NilVal || val.IsNull():
		return s
	case val.Type() == cty.String:
		s.Type = worktree.StrategyType(val.AsString())
		return s
	case !val.Type().IsObjectType() && !val.Type().IsMapType():
		v.bad("branch_strategy", "Invalid branch_strategy", `branch_strategy is a type ("head", "merge-to-head", "branch") or an object { type, branch, base_branch }.`)
		return s
	}
	n := len(v.Diags)
	for it := val.ElementIterator(); it.Next(); {
		k, e := it.Element()
		key := k.AsString()
		var str string
		if err := gocty.FromCtyValue(e, &str); err != nil {
			v.bad("branch_strategy."+key, "Invalid branch_strategy", "branch_strategy.%s must be a string.", key)
			continue
		}
		switch key {
		case "type":
			s.Type = worktree.StrategyType(str)
		case "branch":
			s.Branch = str
		case "base_branch":
			s.BaseBranch = str
		default:
			detail := fmt.Sprintf("branch_strategy has no key %q; it takes type, branch and base_branch.", key)
			if sug := suggest.Closest(key, []string{"type", "branch", "base_branch"}); sug != "" {
				detail += fmt.Sprintf(" Did you mean %q?", sug)
			}
			v.bad("branch_strategy", "Unsupported branch_strategy key", "%s", detail)
		}
	}
	if s.Type == "" {
		v.bad("branch_strategy", "Missing branch strategy type", `branch_strategy needs type = "head", "merge-to-head" or "branch".`)
	}
	if len(v.Diags) > n {
		return worktree.Strategy{}
	}
	return s
}

// Hooks reads the hooks block; a timeout that is not a duration is
// reported at the hook's (run.Hooks.All names the paths).
func (v *Values) Hooks(h *config.HooksBlock) run.Hooks {
	var set run.Hooks
	if h == nil {
		return set
	}
	read := func(path string, i int, command string, timeout *string, sudo *bool) run.Hook {
		attr := fmt.Sprintf("%s[%d].timeout", path, i)
		return run.Hook{Command: command, Timeout: v.Duration(attr, timeout), Sudo: sudo != nil && *sudo}
	}
	if h.Host != nil {
		for i, x := range h.Host.OnWorktreeReady {
			set.HostOnWorktreeReady = append(set.HostOnWorktreeReady, read("hooks.host.on_worktree_ready", i, x.Command, x.Timeout, nil))
		}
		for i, x := range h.Host.OnSandboxReady {
			set.HostOnSandboxReady = append(set.HostOnSandboxReady, read("hooks.host.on_sandbox_ready", i, x.Command, x.Timeout, nil))
		}
	}
	if h.Sandbox != nil {
		for i, x := range h.Sandbox.OnSandboxReady {
			set.SandboxOnSandboxReady = append(set.SandboxOnSandboxReady, read("hooks.sandbox.on_sandbox_ready", i, x.Command, x.Timeout, x.Sudo))
		}
	}
	return set
}

// Logging reads the logging block: its mode (file unless said) and path.
func (v *Values) Logging(l *config.LoggingBlock) (runlog.Mode, string) {
	mode, path := runlog.File, ""
	if l.Type != nil {
		switch m := runlog.Mode(*l.Type); m {
		case runlog.File, runlog.Stdout:
			mode = m
		default:
			v.bad("logging", "Invalid logging type", `%q is not a logging type; use "file" or "stdout".`, *l.Type)
		}
	}
	if l.Path != nil {
		if mode != runlog.File {
			v.bad("logging", "Unexpected logging path", `path applies only to type = "file".`)
		}
		path = *l.Path
	}
	return mode, path
}
