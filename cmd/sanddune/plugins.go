package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newPluginsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Inspect sandbox and agent plugins",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List built-in plugins and plugin binaries on the search path",
		Long: `List every plugin sanddune can use: the built-ins, and each sanddune-plugin-<name>
binary found in SANDDUNE_PLUGIN_PATH, .sanddune/plugins, $XDG_DATA_HOME/sanddune/plugins
and the directory of the sanddune executable (in that order; an external binary
overrides a built-in of the same name).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			wd, _ := os.Getwd()
			host := g.newHost(wd)
			defer host.Close()
			rows := host.List(cmd.Context())
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tVERSION\tPROTOCOLS\tSOURCE")
			failed := false
			for _, r := range rows {
				if r.Err != nil {
					failed = true
					fmt.Fprintf(w, "%s\t-\t-\t-\t%s (error: %s)\n", r.Source.Name, r.Source, firstLine(r.Err.Error()))
					g.logger().Error("plugin failed to start", "plugin", r.Source.Name, "error", r.Err)
					continue
				}
				src := "built-in"
				if !r.Source.Builtin() {
					src = r.Source.Path
					if r.Source.Shadows {
						src += " (overrides built-in)"
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Info.Name, r.Info.Kind, r.Info.Version, joinInts(r.Info.ProtocolVersions), src)
			}
			w.Flush()
			if failed {
				return &exitError{code: exitFailure, err: fmt.Errorf("some plugins failed to start (see the list above)")}
			}
			return nil
		},
	})
	return cmd
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

// firstLine keeps a table row on one line.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}
