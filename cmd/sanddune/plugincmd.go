package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// runPluginCommand runs `sanddune <plugin> <command> [args...]`: a command a
// plugin adds under its own name, such as `sanddune docker build-image`.
// It reports ok=false when no plugin has that name.
func runPluginCommand(name string, args []string) (code int, ok bool) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wd, _ := os.Getwd()
	g := &globals{logLevel: envOr("SANDDUNE_LOG_LEVEL", "warn")}
	host := g.newHost(wd)
	defer host.Close()

	cp, err := commandProvider(ctx, host, name)
	if err != nil {
		var nf *pluginhost.NotFoundError
		if errors.As(err, &nf) {
			return 0, false
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		return exitFailure, true
	}
	specs, err := cp.Commands(ctx)
	if errors.Is(err, sdk.ErrNotSupported) || (err == nil && len(specs) == 0) {
		fmt.Fprintf(os.Stderr, "Error: plugin %q has no commands\n", name)
		return exitUsage, true
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: plugin %q: %v\n", name, err)
		return exitFailure, true
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		printPluginCommands(os.Stdout, name, specs)
		if len(args) == 0 {
			return exitUsage, true
		}
		return exitOK, true
	}
	known := false
	for _, s := range specs {
		known = known || s.Name == args[0]
	}
	if !known {
		fmt.Fprintf(os.Stderr, "Error: plugin %q has no command %q\n", name, args[0])
		printPluginCommands(os.Stderr, name, specs)
		return exitUsage, true
	}
	req := sdk.RunCommandRequest{Name: args[0], Args: args[1:], Cwd: wd, HostUID: os.Getuid(), HostGID: os.Getgid()}
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
	code, err = cp.RunCommand(ctx, req, out)
	if err != nil {
		if ctx.Err() != nil {
			return exitCancelled, true
		}
		var pe *sdk.PluginError
		if errors.As(err, &pe) && !errors.Is(err, sdk.ErrPluginShutdown) {
			err = pe.Err // the plugin's own message; the command line names the plugin
		}
		fmt.Fprintf(os.Stderr, "Error: sanddune %s %s: %v\n", name, args[0], err)
		return exitFailure, true
	}
	return code, true
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

func printPluginCommands(w io.Writer, name string, specs []sdk.CommandSpec) {
	fmt.Fprintf(w, "Commands of plugin %s:\n", name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range specs {
		usage := s.Usage
		if usage == "" {
			usage = s.Name
		}
		fmt.Fprintf(tw, "  sanddune %s %s\t%s\n", name, usage, s.Short)
	}
	tw.Flush()
}
