package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/sdk/host"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print sanddune's version and the plugin protocol versions it speaks",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			var vs []string
			for _, v := range host.Versions() {
				vs = append(vs, strconv.Itoa(v))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "sanddune %s (plugin protocol %s)\n", version, strings.Join(vs, ", "))
		},
	}
}
