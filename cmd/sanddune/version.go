package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/sdk/host"
)

// version is stamped by make install and make dist (-ldflags "-X
// main.version=…", from git describe); empty otherwise.
var version string

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print sanddune's version and the plugin protocol versions it speaks",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}

// versionLine is what `sanddune version` and `sanddune --version` print.
func versionLine() string {
	var vs []string
	for _, v := range host.Versions() {
		vs = append(vs, strconv.Itoa(v))
	}
	return fmt.Sprintf("sanddune %s (plugin protocol %s)", sandduneVersion(), strings.Join(vs, ", "))
}

// sandduneVersion is the version this binary was built as.
func sandduneVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, info)
}

// versionOf picks the version to report: the stamped one, else the module
// version the go command recorded (v1.2.3 for go install …@v1.2.3, a
// pseudo-version when it stamped a checkout's VCS state), else "(devel)"
// with the VCS revision when there is one.
func versionOf(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if info == nil {
		return "(devel)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "(devel) " + rev
}
