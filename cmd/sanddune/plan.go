package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
)

// egressText is a plan's egress policy on one line.
func egressText(e *core.PlannedEgress) string {
	s := "allows " + strings.Join(e.Allow, ", ")
	if len(e.Allow) == 0 {
		s = "allows nothing"
	}
	var hosts []string
	for _, name := range slices.Sorted(maps.Keys(e.Hosts)) {
		hosts = append(hosts, name+" = "+e.Hosts[name])
	}
	if len(hosts) > 0 {
		s += " (hosts: " + strings.Join(hosts, ", ") + ")"
	}
	return s
}

// printPlan prints what each planned run would do (run --dry-run).
func printPlan(w io.Writer, pl *planned, asJSON bool) error {
	f, p := pl.file, pl.plan
	if asJSON {
		runs := p.Runs
		if runs == nil {
			runs = []*core.PlannedRun{}
		}
		return writeJSON(w, struct {
			Runs        []*core.PlannedRun `json:"runs"`
			Diagnostics []jsonDiagnostic   `json:"diagnostics"`
		}{runs, jsonDiagnostics(pl.diags)})
	}
	for _, r := range p.Runs {
		kind := "run"
		if r.Steps != nil {
			kind = "session"
		}
		fmt.Fprintf(w, "%s %s\n", kind, r.Name)
		if r.Pipeline != "" {
			fmt.Fprintf(w, "  pipeline:  %s\n", r.Pipeline)
		}
		if len(r.DependsOn) > 0 {
			fmt.Fprintf(w, "  after:     %s\n", strings.Join(r.DependsOn, ", "))
		}
		if r.ForEach != "" {
			fmt.Fprintf(w, "  for_each:  %s (one run per element, known once the runs above are done)\n", r.ForEach)
		} else if r.AtRunTime {
			fmt.Fprintf(w, "  values:    planned again once the runs above are done (%q stands for what they return)\n", config.Placeholder)
		}
		if len(r.MergeBranches) > 0 {
			fmt.Fprintf(w, "  merges:    %s, before the agent starts\n", strings.Join(r.MergeBranches, ", "))
		} else if b := f.Run(r.Block); r.AtRunTime && b != nil && b.Pipeline.MergeBranches != nil {
			fmt.Fprintf(w, "  merges:    %s (known once the runs above are done), before the agent starts\n", f.ExprText(b.Pipeline.MergeBranches))
		}
		fmt.Fprintf(w, "  repo:      %s\n", r.Repo)
		fmt.Fprintf(w, "  sandbox:   %s (%s)\n", r.Sandbox, r.Contract)
		if e := r.Egress; e != nil {
			fmt.Fprintf(w, "  egress:    %s\n", egressText(e))
		}
		fmt.Fprintf(w, "  agent:     %s\n", r.Agent)
		where := r.TargetBranch
		switch {
		case r.StrategyType == core.StrategyMergeToHead:
			where = "a temporary branch, merged into " + r.TargetBranch
		case where == "":
			where = "(detached HEAD)"
		}
		fmt.Fprintf(w, "  strategy:  %s: commits land on %s\n", r.StrategyType, where)
		prompt := "inline"
		if r.PromptFile != "" {
			prompt = r.PromptFile
		}
		fmt.Fprintf(w, "  prompt:    %s\n", prompt)
		fmt.Fprintf(w, "  loop:      up to %d iteration(s), until %s; idle timeout %s\n", r.MaxIterations, strings.Join(r.CompletionSignals, " or "), r.IdleTimeout)
		if len(r.EnvKeys) > 0 {
			fmt.Fprintf(w, "  env:       %s\n", strings.Join(r.EnvKeys, ", "))
		}
		if len(r.CopyToWorktree) > 0 {
			fmt.Fprintf(w, "  copy:      %s\n", strings.Join(r.CopyToWorktree, ", "))
		}
		if r.Hooks > 0 {
			fmt.Fprintf(w, "  hooks:     %d\n", r.Hooks)
		}
		if r.ResumeSession != "" {
			fmt.Fprintf(w, "  resumes:   session %s\n", r.ResumeSession)
		}
		if r.Output != nil {
			fmt.Fprintf(w, "  output:    %s\n", outputLine(r.Output))
		}
		for i, st := range r.Steps {
			prompt := "inline prompt"
			if st.PromptFile != "" {
				prompt = st.PromptFile
			}
			fmt.Fprintf(w, "  step %d:    %s: agent %s, %s, up to %d iteration(s)", i+1, st.Name, st.Agent, prompt, st.MaxIterations)
			if st.Output != nil {
				fmt.Fprintf(w, ", output %s", outputLine(st.Output))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

// outputLine says what structured output a run reads.
func outputLine(o *core.PlannedOutput) string {
	what := "a string"
	switch {
	case o.Schema:
		what = "JSON matching the schema"
	case o.Type == core.OutputJSON:
		what = "JSON"
	}
	return fmt.Sprintf("the last <%s>…</%s> of the agent's final text, as %s", o.Tag, o.Tag, what)
}

// jsonDiagnostic is a config diagnostic in run's --json output.
type jsonDiagnostic struct {
	Severity string  `json:"severity"` // "error" or "warning"
	Summary  string  `json:"summary"`
	Detail   string  `json:"detail"`
	File     *string `json:"file"`
	Line     *int    `json:"line"`
	Column   *int    `json:"column"`
}

func jsonDiagnostics(diags hcl.Diagnostics) []jsonDiagnostic {
	out := []jsonDiagnostic{}
	for _, d := range diags {
		jd := jsonDiagnostic{Severity: "warning", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagError {
			jd.Severity = "error"
		}
		if r := d.Subject; r != nil {
			jd.File, jd.Line, jd.Column = &r.Filename, &r.Start.Line, &r.Start.Column
		}
		out = append(out, jd)
	}
	return out
}

// printConfigErrorJSON prints run --json's document for a config that did
// not plan: no runs, and its diagnostics (the error itself when it has
// none, such as a missing config file).
func printConfigErrorJSON(w io.Writer, err error) {
	diags := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: err.Error()}}
	var ce *configError
	if errors.As(err, &ce) && ce.diags.HasErrors() {
		diags = ce.diags
	}
	writeRunsJSON(w, []core.Outcome{}, diags)
}

// writeRunsJSON writes run --json's document: the runs' outcomes and the
// config's diagnostics.
func writeRunsJSON(w io.Writer, outs []core.Outcome, diags hcl.Diagnostics) {
	writeJSON(w, struct {
		Runs        []core.Outcome   `json:"runs"`
		Diagnostics []jsonDiagnostic `json:"diagnostics"`
	}{outs, jsonDiagnostics(diags)})
}

func writeJSON(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}
