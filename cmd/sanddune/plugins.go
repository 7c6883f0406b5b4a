package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/sdk"
)

func newPluginsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Inspect, trust, pin and install sandbox and agent plugins",
	}
	cmd.AddCommand(newPluginsListCommand(g), newPluginsLockCommand(g), newPluginsInstallCommand(g), newPluginsTestCommand())
	return cmd
}

func newPluginsListCommand(g *globals) *cobra.Command {
	var cf configFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "List built-in plugins and plugin binaries, with their checksums and whether they are locked",
		Long: `List every plugin sanddune can use: the built-ins, the binaries a config's
required_plugins names by source, and each sanddune-plugin-<name> binary found in
SANDDUNE_PLUGIN_PATH, .sanddune/plugins, $XDG_DATA_HOME/sanddune/plugins and the
directory of the sanddune executable (in that order). A binary with a built-in's
name is ignored unless the config asks for it by source. A binary of the
repository's .sanddune/plugins (or named by the config) that you have not trusted
is listed, not started: trust and pin it with sanddune plugins lock.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, err := hostForConfig(cmd.Context(), g, &cf)
			if err != nil {
				return err
			}
			defer host.Close()
			rows := host.List(cmd.Context())
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tVERSION\tPROTOCOLS\tCAPABILITIES\tSHA256\tLOCKED\tSOURCE")
			failed := false
			var missing []string // binaries serving built-ins, each once
			for _, r := range rows {
				sum, locked := "-", "-"
				if !r.Source.Builtin() {
					sum, locked = shortSum(r.SHA256), lockState(host, r)
				}
				var ue *pluginhost.UntrustedError
				var me *pluginhost.MissingBuiltinError
				switch {
				case r.Ignored:
					fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s\t%s\t%s (ignored: the built-in wins; ask for it by source in required_plugins)\n", r.Source.Name, sum, locked, r.Source.Path)
				case errors.As(r.Err, &ue):
					fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s\t%s\t%s (not trusted, not started: sanddune plugins lock)\n", r.Source.Name, sum, locked, r.Source.Path)
				case errors.As(r.Err, &me): // an install without it: only configs using it fail
					fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s\t%s\t%s (missing: %s)\n", r.Source.Name, sum, locked, r.Source, filepath.Base(me.Path))
					if !slices.Contains(missing, me.Path) {
						missing = append(missing, me.Path)
					}
				case r.Err != nil:
					failed = true
					fmt.Fprintf(w, "%s\t-\t-\t-\t-\t%s\t%s\t%s (error: %s)\n", r.Source.Name, sum, locked, r.Source, firstLine(r.Err.Error()))
					g.logger().Error("plugin failed to start", "plugin", r.Source.Name, "error", r.Err)
				default:
					src := "built-in"
					if !r.Source.Builtin() {
						src = r.Source.Path
						if r.Source.Shadows {
							src += " (replaces the built-in, as required_plugins asks)"
						}
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Info.Name, r.Info.Kind, r.Info.Version, joinInts(r.Info.ProtocolVersions), capabilities(r.Info), sum, locked, src)
				}
			}
			w.Flush()
			for _, path := range missing {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s is missing (sanddune starts built-ins from it, beside itself): %s\n", path, pluginhost.InstallHint(path))
			}
			if failed {
				return &exitError{code: exitFailure, err: fmt.Errorf("some plugins failed to start (see the list above)")}
			}
			return nil
		},
	}
	cf.register(c)
	return c
}

func newPluginsLockCommand(g *globals) *cobra.Command {
	var cf configFlags
	c := &cobra.Command{
		Use:   "lock",
		Short: "Trust the repository's plugin binaries and pin every plugin binary in .sanddune/plugins.lock.hcl",
		Long: `Trust and pin the plugin binaries this repository uses. Review them first:
locking runs them.

Binaries in the repository's .sanddune/plugins (and those the config's
required_plugins names by source) are never run until you trust them: lock records
their SHA-256 as trusted in $XDG_DATA_HOME/sanddune/trusted-plugins, outside the
repository, so a cloned repository cannot trust its own binaries. Every external
plugin binary is then pinned by SHA-256 in .sanddune/plugins.lock.hcl (commit it):
before each start, a binary that no longer matches is refused, naming both
checksums. Built-in plugins are part of sanddune and are not locked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, err := hostForConfig(cmd.Context(), g, &cf)
			if err != nil {
				return err
			}
			defer host.Close()
			entries, err := host.LockRepo(cmd.Context())
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			out := cmd.OutOrStdout()
			if len(entries) == 0 {
				fmt.Fprintf(out, "no plugin binaries to lock (built-ins need none); wrote %s\n", host.RepoLockFile())
				return nil
			}
			for _, e := range entries {
				fmt.Fprintf(out, "locked %s %s (%s) sha256:%s\n", e.Name, e.Version, e.Source, e.SHA256)
			}
			fmt.Fprintf(out, "wrote %s\n", host.RepoLockFile())
			return nil
		},
	}
	cf.register(c)
	return c
}

func newPluginsInstallCommand(g *globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "install PATH",
		Short: "Copy a plugin binary into the user plugin dir and pin it",
		Long: `Start the plugin binary at PATH to check that it is a sanddune plugin, copy it to
$XDG_DATA_HOME/sanddune/plugins/sanddune-plugin-<name>, and pin its SHA-256 in
$XDG_DATA_HOME/sanddune/plugins.lock.hcl (checked before each start, like the
repository's lock file). The name comes from the file name (sanddune-plugin-<name>)
or --name. A built-in's name is refused: a binary replaces a built-in only when a
config asks for it by source.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, _ := os.Getwd()
			host := g.newHost(wd)
			defer host.Close()
			e, err := host.Install(cmd.Context(), args[0], name)
			if err != nil {
				return &exitError{code: exitFailure, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s %s as %s sha256:%s (pinned in %s)\n", e.Name, e.Version, e.Source, e.SHA256, host.UserLockFile())
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "plugin name (default: from the file name sanddune-plugin-<name>)")
	return c
}

// hostForConfig is a plugin host with the required_plugins of the config
// -c names; without -c, of the default config when there is one.
func hostForConfig(ctx context.Context, g *globals, cf *configFlags) (*pluginhost.Host, error) {
	wd, _ := os.Getwd()
	explicit := cf.path != DefaultConfigPath
	path := findDefaultConfig(ctx, cf.path)
	if !explicit && !fileExists(path) {
		return g.newHost(wd), nil
	}
	vars, err := cf.varMap()
	if err != nil {
		return nil, err
	}
	file, diags := config.Load(path, vars, os.Environ())
	if diags.HasErrors() {
		file.WriteDiagnostics(os.Stderr, diags, termWidth(), isatty.IsTerminal(os.Stderr.Fd()))
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s has errors (see above)", path)}
	}
	return g.newHost(file.Dir, file.RequiredPlugins...), nil
}

// lockState says which lock file pins a binary, and whether it matches.
func lockState(host *pluginhost.Host, r pluginhost.Listing) string {
	var which string
	switch r.Lock {
	case "":
		return "no"
	case host.UserLockFile():
		which = "user"
	default:
		which = "repo"
	}
	if r.Mismatch {
		return "MISMATCH (" + which + ")"
	}
	return "yes (" + which + ")"
}

func shortSum(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
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

// capabilities lists what a sandbox provider declares (its contract first),
// comma-separated; "-" for an agent.
func capabilities(info sdk.Info) string {
	c := info.Sandbox
	if c == nil {
		return "-"
	}
	out := []string{string(c.Contract)}
	for _, f := range []struct {
		on   bool
		name string
	}{{c.NetworkNone, "network-none"}, {c.Egress, "egress"}, {c.TTY, "tty"}, {c.Sudo, "sudo"}, {c.Confines, "confines"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, ",")
}
