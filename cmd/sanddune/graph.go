package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
)

func newGraphCommand() *cobra.Command {
	f := &configFlags{}
	var asJSON, dot bool
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Print the runs' dependency graph (depends_on, for_each, merge_branches, pipelines)",
		Long: `Print the DAG of the config's run blocks, dependencies first: what each run needs (depends_on
and the runs its attributes reference), its pipeline, for_each and merge_branches; then the
sessions (which run after the runs) with their steps. Starts no plugin; cycles and unknown runs
are errors with file:line:col (exit 1). --dot prints Graphviz.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vars, err := f.varMap()
			if err != nil {
				return err
			}
			f.path = findDefaultConfig(cmd.Context(), f.path)
			file, diags := config.Load(f.path, vars, os.Environ())
			if diags.HasErrors() {
				file.WriteDiagnostics(os.Stderr, diags, termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
				return &exitError{code: exitFailure, err: fmt.Errorf("%s has errors (see above)", f.path)}
			}
			nodes, ds := core.Graph(file)
			if ds.HasErrors() {
				file.WriteDiagnostics(os.Stderr, ds.HCL(), termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
				return &exitError{code: exitFailure, err: fmt.Errorf("%s has errors (see above)", f.path)}
			}
			return printGraph(cmd.OutOrStdout(), nodes, graphSessions(file), asJSON, dot)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the graph as JSON ({"runs":[{"run","needs","pipeline","for_each","merge_branches"}],"sessions":[{"session","steps"}]})`)
	cmd.Flags().BoolVar(&dot, "dot", false, "print the graph in Graphviz dot")
	return cmd
}

// graphSession is a session block in the graph: it needs no run, and
// runs after the runs.
type graphSession struct {
	Session string   `json:"session"`
	Steps   []string `json:"steps"`
}

func graphSessions(f *config.File) []graphSession {
	out := []graphSession{}
	for _, ss := range f.Sessions {
		gs := graphSession{Session: ss.Label, Steps: []string{}}
		for _, st := range ss.Steps {
			gs.Steps = append(gs.Steps, st.Label)
		}
		out = append(out, gs)
	}
	return out
}

// printGraph prints the graph: one line per run, dependencies first, then
// the sessions.
func printGraph(w io.Writer, nodes []core.GraphNode, sessions []graphSession, asJSON, dot bool) error {
	switch {
	case asJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if nodes == nil {
			nodes = []core.GraphNode{}
		}
		return enc.Encode(struct {
			Runs     []core.GraphNode `json:"runs"`
			Sessions []graphSession   `json:"sessions"`
		}{nodes, sessions})
	case dot:
		fmt.Fprintln(w, "digraph sanddune {")
		for _, n := range nodes {
			label := []string{n.Run}
			if n.ForEach != "" {
				label = append(label, "for_each "+n.ForEach)
			}
			fmt.Fprintf(w, "  %s [label=%s];\n", dotString(n.Run), dotString(label...))
			for _, need := range n.Needs {
				fmt.Fprintf(w, "  %s -> %s;\n", dotString(need), dotString(n.Run))
			}
		}
		for _, ss := range sessions {
			fmt.Fprintf(w, "  %s [label=%s, shape=box];\n", dotString(ss.Session), dotString("session "+ss.Session, "steps "+strings.Join(ss.Steps, ", ")))
		}
		fmt.Fprintln(w, "}")
		return nil
	}
	for _, n := range nodes {
		line := "run." + n.Run
		if n.Pipeline != "" {
			line += "  (pipeline " + n.Pipeline + ")"
		}
		fmt.Fprintln(w, line)
		if len(n.Needs) > 0 {
			fmt.Fprintf(w, "  after:          run.%s\n", strings.Join(n.Needs, ", run."))
		}
		if n.ForEach != "" {
			fmt.Fprintf(w, "  for_each:       %s\n", n.ForEach)
		}
		if n.MergeBranches != "" {
			fmt.Fprintf(w, "  merge_branches: %s\n", n.MergeBranches)
		}
	}
	for _, ss := range sessions {
		fmt.Fprintf(w, "session.%s\n  steps:          %s\n", ss.Session, strings.Join(ss.Steps, ", "))
	}
	return nil
}

// dotString is a Graphviz quoted string of lines (joined by dot's \n).
func dotString(lines ...string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	for i, l := range lines {
		lines[i] = esc.Replace(l)
	}
	return `"` + strings.Join(lines, `\n`) + `"`
}
