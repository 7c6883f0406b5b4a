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
and the runs its attributes reference), its pipeline, for_each and merge_branches. Starts no
plugin; cycles and unknown runs are errors with file:line:col (exit 1). --dot prints Graphviz.`,
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
			return printGraph(cmd.OutOrStdout(), nodes, asJSON, dot)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the graph as JSON ({"runs":[{"run","needs","pipeline","for_each","merge_branches"}]})`)
	cmd.Flags().BoolVar(&dot, "dot", false, "print the graph in Graphviz dot")
	return cmd
}

// printGraph prints the graph: one line per run, dependencies first.
func printGraph(w io.Writer, nodes []core.GraphNode, asJSON, dot bool) error {
	switch {
	case asJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if nodes == nil {
			nodes = []core.GraphNode{}
		}
		return enc.Encode(struct {
			Runs []core.GraphNode `json:"runs"`
		}{nodes})
	case dot:
		fmt.Fprintln(w, "digraph sanddune {")
		for _, n := range nodes {
			label := n.Run
			if n.ForEach != "" {
				label += `\nfor_each ` + n.ForEach
			}
			fmt.Fprintf(w, "  %q [label=%q];\n", n.Run, label)
			for _, need := range n.Needs {
				fmt.Fprintf(w, "  %q -> %q;\n", need, n.Run)
			}
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
	return nil
}
