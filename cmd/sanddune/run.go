package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/sdk"
)

type runFlags struct {
	configFlags
	json     bool
	log      string
	events   string
	parallel int
}

func newRunCommand(g *globals) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [RUN...]",
		Short: "Run agents: the named runs, or every run in the config in file order",
		Long: `Run the named run blocks (default: all of them, in file order). Each run creates a
worktree and a sandbox, renders the prompt, and runs the agent until it prints a completion
signal or reaches max_iterations; its commits land on a branch.

Exit codes: 0 success, 1 a run failed, 2 config or usage error, 130 cancelled (SIGINT/SIGTERM).
On failure or cancellation nothing is lost: the error says which branch holds the commits and
where uncommitted work is preserved.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRuns(cmd, g, f, args) },
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, `print the results as JSON on stdout ({"runs":[...]}); progress goes to stderr`)
	cmd.Flags().StringVar(&f.log, "log", "", "where progress goes: file (default; .sanddune/logs) or stdout; overrides the runs' logging blocks")
	cmd.Flags().StringVar(&f.events, "events", "", "write every agent event as a JSON line to this file")
	cmd.Flags().StringVar(&f.configFlags.repo, "repo", "", "host git repository (default: the repo containing the working directory); overrides the runs' repo")
	cmd.Flags().IntVarP(&f.parallel, "parallel", "p", 1, "how many runs to run at once")
	return cmd
}

func runRuns(cmd *cobra.Command, g *globals, f *runFlags, names []string) error {
	if f.log != "" && f.log != string(core.LogFile) && f.log != string(core.LogStdout) {
		return &exitError{code: exitUsage, err: fmt.Errorf("--log %q: want file or stdout", f.log)}
	}
	if f.parallel < 1 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--parallel must be at least 1")}
	}
	// SIGINT/SIGTERM cancel the runs; they kill their agents, keep the work,
	// and the command exits 130. A second signal kills sanddune at once.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()

	if f.configFlags.repo != "" {
		f.configFlags.repo, _ = filepath.Abs(f.configFlags.repo)
	}
	l, err := loadConfig(ctx, g, &f.configFlags)
	if err != nil {
		return err
	}
	defer l.host.Close()
	runs, err := selectRuns(l.file, names)
	if err != nil {
		return err
	}
	if f.parallel > 1 {
		if err := checkParallel(runs, f.configFlags.repo); err != nil {
			return err
		}
	}

	term := runlog.Stdio()
	if f.json {
		term = runlog.NewTerminal(os.Stderr, os.Stderr)
	}
	var onEvent func(core.AgentEvent)
	if f.events != "" {
		ef, err := os.Create(f.events)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--events: %w", err)}
		}
		defer ef.Close()
		onEvent = core.NewEventWriter(ef).Write
	}

	opts := make([]core.RunOptions, len(runs))
	for i, r := range runs {
		o := r.Options
		o.Sandbox.Provider = mustResolve(ctx, l, r.Sandbox)
		o.Agent.Provider = mustResolve(ctx, l, r.Agent)
		if f.configFlags.repo != "" {
			o.Repo = f.configFlags.repo
		}
		if f.log != "" {
			o.Logging.Mode = core.LogMode(f.log)
		}
		o.Logging.Terminal = term
		o.OnEvent = onEvent
		o.Version = version
		opts[i] = o
	}

	results := make([]*core.Result, len(opts))
	errs := make([]error, len(opts))
	sem := make(chan struct{}, f.parallel)
	var wg sync.WaitGroup
	for i := range opts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = core.Run(ctx, opts[i])
		}()
	}
	wg.Wait()

	if f.json {
		printJSON(cmd, opts, results, errs)
	} else {
		printSummary(term, opts, results, errs)
	}
	return worstExit(errs)
}

// checkParallel refuses to start at once two runs that would work on the
// same branch: the second would only fail on the first one's lock.
func checkParallel(runs []*config.RunBlock, repoFlag string) error {
	seen := map[string]string{}
	for _, r := range runs {
		o := r.Options
		repo := o.Repo
		if repoFlag != "" {
			repo = repoFlag
		}
		var key string
		switch t := o.BranchStrategy.Type; {
		case t == core.StrategyBranch:
			key = "branch " + o.BranchStrategy.Branch
		case t == core.StrategyHead, t == "" && r.Sandbox.Info.Sandbox != nil && r.Sandbox.Info.Sandbox.Contract == sdk.ContractBindMount:
			key = "the checked-out branch (head strategy)"
		default:
			continue // merge-to-head: a temp branch of its own
		}
		if other, ok := seen[repo+"\x00"+key]; ok {
			return &exitError{code: exitUsage, err: fmt.Errorf("runs %q and %q both work on %s, so they cannot run at the same time: run them one after the other (without --parallel) or give them different branches", other, o.Name, key)}
		}
		seen[repo+"\x00"+key] = o.Name
	}
	return nil
}

// mustResolve returns the provider of a block loadConfig already resolved.
func mustResolve(ctx context.Context, l *loaded, b *config.ProviderBlock) sdk.Provider {
	c, err := l.host.Resolve(ctx, b.Kind, b.Plugin)
	if err != nil {
		panic(fmt.Sprintf("provider %s resolved during validation but not now: %v", b.Address, err))
	}
	return c.Provider
}

func selectRuns(file *config.File, names []string) ([]*config.RunBlock, error) {
	if len(file.Runs) == 0 {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s has no run blocks", file.Path)}
	}
	if len(names) == 0 {
		return file.Runs, nil
	}
	var out []*config.RunBlock
	for _, n := range names {
		r := file.Run(n)
		if r == nil {
			var have []string
			for _, r := range file.Runs {
				have = append(have, r.Label)
			}
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("no run %q in %s (runs: %s)", n, file.Path, strings.Join(have, ", "))}
		}
		out = append(out, r)
	}
	return out, nil
}

// jsonRun is one entry of the --json document: the run's result (what a
// failed run left, too) followed by "error", null on success.
type jsonRun struct {
	*core.Result
	Error error
}

func (j jsonRun) MarshalJSON() ([]byte, error) {
	b, err := j.Result.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var msg *string
	if j.Error != nil {
		s := j.Error.Error()
		msg = &s
	}
	var e bytes.Buffer
	enc := json.NewEncoder(&e)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"error":`...)
	return append(append(b, bytes.TrimSpace(e.Bytes())...), '}'), nil
}

func printJSON(cmd *cobra.Command, opts []core.RunOptions, results []*core.Result, errs []error) {
	doc := struct {
		Runs []jsonRun `json:"runs"`
	}{}
	for i, r := range results {
		if r == nil {
			r = &core.Result{Name: opts[i].Name}
		}
		doc.Runs = append(doc.Runs, jsonRun{Result: r, Error: errs[i]})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(doc)
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
		}
	}
}

func printSummary(term *runlog.Terminal, opts []core.RunOptions, results []*core.Result, errs []error) {
	for i, r := range results {
		if errs[i] != nil {
			term.Eprintln(fmt.Sprintf("✗ %s: %v", opts[i].Name, errs[i]))
			continue
		}
		line := fmt.Sprintf("✓ %s: %d commit(s) on %s", r.Name, len(r.Commits), r.Branch)
		if r.CompletionSignal != "" {
			line += ", completed with " + r.CompletionSignal
		}
		if r.PreservedWorktreePath != "" {
			line += "; uncommitted work kept in " + r.PreservedWorktreePath
		}
		if r.PatchPath != "" {
			line += "; uncommitted sandbox work saved to " + r.PatchPath
		}
		term.Println(line)
	}
}

// worstExit maps the runs' errors to the command's exit code: cancelled
// beats usage beats failure.
func worstExit(errs []error) error {
	code := exitOK
	var first error
	for _, err := range errs {
		c := core.ExitCode(err)
		if c == exitOK {
			continue
		}
		if first == nil {
			first = err
		}
		if rank(c) > rank(code) {
			code = c
		}
	}
	if code == exitOK {
		return nil
	}
	// The errors were printed with the results.
	return &exitError{code: code, err: errors.New("")}
}

func rank(code int) int {
	switch code {
	case exitCancelled:
		return 3
	case exitUsage:
		return 2
	case exitFailure:
		return 1
	}
	return 0
}
