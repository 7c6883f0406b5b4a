package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/suggest"
	"github.com/missingstudio/sanddune/core/worktree"
)

// globals are the flags every command shares.
type globals struct {
	logLevel string
	// stopNote is what the first interrupt signal is answered with: set by
	// the commands that run agents.
	stopNote noteValue
	// notes is where the interrupt notes go: stderr, or above run's live
	// view.
	notes syncWriter
}

// noteValue is a string set by a command and read by the signal handler.
type noteValue struct{ v atomic.Value }

func (n *noteValue) Store(s string) { n.v.Store(s) }
func (n *noteValue) Load() string {
	s, _ := n.v.Load().(string)
	return s
}

// savingNote answers the first interrupt of a command that runs agents.
const savingNote = "stopping; each run is saving its work (commits, uncommitted changes) before it ends"

func newRootCommand() (*cobra.Command, *globals) {
	g := &globals{}
	g.notes.set(os.Stderr)
	root := &cobra.Command{
		Use:   "sanddune",
		Short: "Turn a prompt, a coding agent and a sandbox into commits on a git branch",
		Long: `sanddune runs a coding agent in a sandbox, in a loop, until it signals completion,
and returns the commits it made on a git branch: a worktree's branch of its own ("branch",
"merge-to-head"), or, with "head" (the default of bind-mount sandboxes), your checkout's.

Providers (sandboxes and agents) are plugins: built in, or binaries named
sanddune-plugin-<name> on SANDDUNE_PLUGIN_PATH, $XDG_DATA_HOME/sanddune/plugins,
or .sanddune/plugins (run only once trusted: sanddune plugins lock). Plugins may
add their own commands:
sanddune <plugin> <command> (e.g. sanddune docker build-image).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", envOr("SANDDUNE_LOG_LEVEL", "warn"), "diagnostic log level on stderr: trace, debug, info, warn, error")
	root.AddCommand(
		newVersionCommand(),
		newInitCommand(g),
		newPluginsCommand(g),
		newValidateCommand(g),
		newGraphCommand(),
		newFmtCommand(),
		newRunCommand(g),
		newInteractiveCommand(g),
		newGCCommand(g),
		newStatusCommand(),
		newLogsCommand(),
	)
	rejectUnknownSubcommands(root)
	root.SetFlagErrorFunc(suggestFlag)
	return root, g
}

// suggestFlag adds a did-you-mean to an unknown long flag (cobra suggests
// commands only): the command's flag closest to it.
func suggestFlag(cmd *cobra.Command, err error) error {
	word, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if sug := suggest.Closest(word, names); sug != "" {
		err = fmt.Errorf("%w\n\nDid you mean this?\n\t--%s", err, sug)
	}
	return err
}

// rejectUnknownSubcommands makes every command group (a command with
// subcommands and no action of its own, like `plugins`) fail on a word
// that is none of its subcommands, with a did-you-mean; cobra would print
// its help and exit 0. Without a word it still prints its help.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if c.HasParent() && c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownSubcommand(cmd, args[0])
		}
	}
}

// unknownSubcommand is the usage error of a word that is none of cmd's
// subcommands: a did-you-mean, else the subcommands cmd has.
func unknownSubcommand(cmd *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, cmd.CommandPath())
	if sug := cmd.SuggestionsFor(word); len(sug) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(sug, "\n\t")
	} else {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		msg += fmt.Sprintf("; %s has: %s", cmd.CommandPath(), strings.Join(names, ", "))
	}
	return errors.New(msg)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// logger is sanddune's diagnostic logger (plugin logs included).
func (g *globals) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "sanddune",
		Level:  hclog.LevelFromString(g.logLevel),
		Output: os.Stderr,
	})
}

// executable is sanddune's own binary, symlinks resolved ("" when unknown).
func executable() string {
	exe, _ := os.Executable()
	if exe != "" {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
	}
	return exe
}

// newHost returns a plugin host for the repo containing dir (if any), with
// a config's required_plugins.
func (g *globals) newHost(dir string, required ...*config.RequiredPlugin) *pluginhost.Host {
	var repoRoot string
	if repo, err := worktree.Open(context.Background(), dir); err == nil {
		repoRoot = repo.Root
	}
	reqs := map[string]pluginhost.Requirement{}
	for _, r := range required {
		reqs[r.Name] = pluginhost.Requirement{Source: r.Source, Version: r.Version, Decl: r.Decl()}
	}
	return pluginhost.New(pluginhost.Options{
		Builtins:   builtins,
		Executable: executable(),
		Self:       builtinsBinary,
		RepoRoot:   repoRoot,
		Logger:     g.logger(),
		Required:   reqs,
	})
}
