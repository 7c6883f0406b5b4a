package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// addPluginCommands adds to root the commands of the plugin named by the
// first word of args, when that word is no built-in command: `sanddune
// <plugin> <command> [args...]`, e.g. `sanddune docker build-image`. The
// plugin parses its own arguments; --log-level works before or after the
// plugin's name. The returned func closes the plugin host.
func addPluginCommands(ctx context.Context, root *cobra.Command, g *globals, args []string) (closeHost func()) {
	word := firstWord(args)
	if word == "help" { // sanddune help <plugin>
		word = firstWord(args[slices.Index(args, "help")+1:])
	}
	if word == "" || word == "completion" {
		return func() {}
	}
	for _, c := range root.Commands() {
		if c.Name() == word || c.HasAlias(word) {
			return func() {}
		}
	}
	g.logLevel = logLevelArg(args, g.logLevel)
	wd, _ := os.Getwd()
	host := g.newHost(wd)
	cp, err := commandProvider(ctx, host, word)
	if err != nil {
		var nf *pluginhost.NotFoundError
		if !errors.As(err, &nf) {
			g.logger().Warn("plugin failed", "plugin", word, "error", err)
		}
		return host.Close // cobra reports the unknown command
	}
	specs, err := cp.Commands(ctx)
	if err != nil && !errors.Is(err, sdk.ErrNotSupported) {
		g.logger().Warn("plugin failed to list its commands", "plugin", word, "error", err)
	}
	parent := &cobra.Command{
		Use:   word,
		Short: fmt.Sprintf("Commands of the %s plugin", word),
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(cmd, args[0])
			}
			cmd.Help()
			if len(specs) == 0 { // no command group: a plugin's name is no command
				return &exitError{code: exitUsage, err: errors.New("")}
			}
			return nil // like every command group
		},
	}
	parent.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	if len(specs) == 0 {
		parent.Long = fmt.Sprintf("The %s plugin has no commands.", word)
	}
	for _, s := range specs {
		usage := s.Usage
		if usage == "" {
			usage = s.Name
		}
		sub := &cobra.Command{
			Use:                usage,
			Short:              s.Short,
			DisableFlagParsing: true, // the plugin's own arguments
			RunE: func(cmd *cobra.Command, args []string) error {
				args = withoutLogLevel(args)
				if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
					return cmd.Help()
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return runPluginCommand(ctx, cp, word, s.Name, args)
			},
		}
		// Only the plugin knows its flags: its own --help lists them.
		sub.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s\n\n", s.Short)
			if err := runPluginCommand(ctx, cp, word, s.Name, []string{"--help"}); err != nil {
				fmt.Fprintf(w, "Usage:\n  %s %s\n", parent.CommandPath(), usage)
			}
			fmt.Fprintf(w, "\nGlobal Flags:\n%s", cmd.InheritedFlags().FlagUsages())
		})
		parent.AddCommand(sub)
	}
	root.AddCommand(parent)
	return host.Close
}

// runPluginCommand runs one plugin command with the host's terminal.
func runPluginCommand(ctx context.Context, cp sdk.CommandProvider, plugin, name string, args []string) error {
	wd, _ := os.Getwd()
	req := sdk.RunCommandRequest{Name: name, Args: args, Cwd: wd, HostUID: os.Getuid(), HostGID: os.Getgid()}
	if repo, err := worktree.Open(ctx, wd); err == nil {
		req.HostRepoPath = repo.Root
	}
	out := sdk.SyncOutput(func(l sdk.OutputLine) {
		w := os.Stdout
		if l.Stream == sdk.Stderr {
			w = os.Stderr
		}
		w.Write(l.Text)
		if !l.Partial {
			w.Write([]byte{'\n'})
		}
	})
	code, err := cp.RunCommand(ctx, req, out)
	switch {
	case err != nil && ctx.Err() != nil:
		return &exitError{code: exitCancelled, err: errors.New("")}
	case err != nil:
		code := exitFailure
		if errors.Is(err, sdk.ErrUsage) {
			code = exitUsage
		}
		if u := errors.Unwrap(err); u != nil && !errors.Is(err, sdk.ErrPluginShutdown) {
			err = u // the plugin's own message; the command line names the plugin
		}
		return &exitError{code: code, err: fmt.Errorf("sanddune %s %s: %w", plugin, name, err)}
	case code != 0:
		return &exitError{code: code, err: errors.New("")}
	}
	return nil
}

// commandProvider finds a plugin named name (sandbox first, then agent).
func commandProvider(ctx context.Context, host *pluginhost.Host, name string) (sdk.CommandProvider, error) {
	c, err := host.Resolve(ctx, sdk.KindSandbox, name)
	if err != nil {
		var nf *pluginhost.NotFoundError
		if !errors.As(err, &nf) {
			return nil, err
		}
		if c, err = host.Resolve(ctx, sdk.KindAgent, name); err != nil {
			return nil, err
		}
	}
	cp, ok := c.Provider.(sdk.CommandProvider)
	if !ok {
		return nil, fmt.Errorf("plugin %q has no commands", name)
	}
	return cp, nil
}

// firstWord is the first argument that is neither a flag nor a flag's
// value (only --log-level takes one before a command).
func firstWord(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--log-level":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// logLevelArg is the value of the last --log-level in args, else def.
func logLevelArg(args []string, def string) string {
	for i := 0; i < len(args); i++ {
		if v, ok := strings.CutPrefix(args[i], "--log-level="); ok {
			def = v
		} else if args[i] == "--log-level" && i+1 < len(args) {
			def = args[i+1]
			i++
		}
	}
	return def
}

func withoutLogLevel(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], "--log-level="):
		case args[i] == "--log-level":
			i++
		default:
			out = append(out, args[i])
		}
	}
	return out
}
