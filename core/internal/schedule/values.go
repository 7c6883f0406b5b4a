package schedule

import (
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/run"
)

// resultValue is a run's result as run.<label> sees it: name, branch,
// commits, completion_signal, stdout and output (its structured output,
// null without one).
func resultValue(o run.Outcome) cty.Value {
	r := o.Result
	if r == nil {
		r = &run.Result{Name: o.Name}
	}
	commits := make([]cty.Value, len(r.Commits))
	for i, c := range r.Commits {
		commits[i] = cty.ObjectVal(map[string]cty.Value{"sha": cty.StringVal(c.SHA)})
	}
	list := cty.ListValEmpty(cty.Object(map[string]cty.Type{"sha": cty.String}))
	if len(commits) > 0 {
		list = cty.ListVal(commits)
	}
	out, err := output.Cty(r.Output)
	if err != nil { // a value the extraction decoded: not expected
		out = cty.NullVal(cty.DynamicPseudoType)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"output":            out,
		"name":              cty.StringVal(r.Name),
		"branch":            cty.StringVal(r.Branch),
		"commits":           list,
		"completion_signal": cty.StringVal(r.CompletionSignal),
		"stdout":            cty.StringVal(r.Stdout),
	})
}

// nodeValue is run.<label>: the result, or for a for_each run its
// instances' results, a list (for_each over a list) or a map by key.
func nodeValue[R any](n *Node[R], runs []R, outs []run.Outcome, rs Runs[R]) cty.Value {
	if !n.ForEach {
		if len(outs) == 0 {
			return cty.NullVal(cty.DynamicPseudoType)
		}
		return resultValue(outs[0])
	}
	byKey := map[string]cty.Value{}
	var list []cty.Value
	numeric := true
	for i, o := range outs {
		v := resultValue(o)
		list = append(list, v)
		if i < len(runs) {
			key, val := rs.Key(runs[i])
			byKey[key] = v
			numeric = numeric && val.Type() == cty.Number
		}
	}
	if numeric {
		if len(list) == 0 {
			return cty.EmptyTupleVal
		}
		return cty.TupleVal(list)
	}
	return cty.ObjectVal(byKey)
}
