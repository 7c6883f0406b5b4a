package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/sdk"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print sanddune's version and plugin protocol version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "sanddune %s (plugin protocol %d)\n", version, sdk.ProtocolVersion)
		},
	}
}
