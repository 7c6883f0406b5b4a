package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/missingstudio/sanddune/sdk/plugintest"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func newPluginsTestCommand() *cobra.Command {
	var verbose bool
	var run string
	c := &cobra.Command{
		Use:   "test BINARY",
		Short: "Run the conformance kit against a plugin binary (any language)",
		Long: `Start the plugin binary the way sanddune does (handshake, mutual TLS) and run the
conformance kit of each component it serves against it: sdk/sandboxtest for sandbox
providers, sdk/agenttest's generic checks for agent providers (with an empty config
block). The output is go test's (-v shows every check; --run takes one regexp per level
of a check's name, e.g. sandbox/docker/Copy); exit 1 when a check fails. Given sanddune
itself, it tests the built-ins sanddune serves. BINARY runs with your rights: test only
binaries you trust.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := filepath.Abs(args[0])
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			fi, err := os.Stat(bin)
			if err != nil || !fi.Mode().IsRegular() {
				return &exitError{code: exitUsage, err: fmt.Errorf("%s is not a plugin binary: %v", args[0], err)}
			}
			exe := executable()
			if self, err := os.Stat(exe); err == nil && os.SameFile(fi, self) {
				// sanddune itself: its built-ins, started as the plugin
				// host starts them (a symlink gives the kits its argv[0]).
				dir, err := os.MkdirTemp("", "sanddune-plugins-test-")
				if err != nil {
					return fmt.Errorf("testing sanddune's built-ins: %w", err)
				}
				defer os.RemoveAll(dir)
				bin = filepath.Join(dir, builtinsBinary)
				if err := os.Symlink(exe, bin); err != nil {
					return fmt.Errorf("testing sanddune's built-ins: linking %s as %s: %w", exe, builtinsBinary, err)
				}
			}
			if code := runKits(cmd.OutOrStdout(), bin, verbose, run); code != 0 {
				return &exitError{code: exitFailure, err: fmt.Errorf("%s does not pass the conformance kit (see above)", args[0])}
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every check (go test -v)")
	c.Flags().StringVar(&run, "run", "", "run only the checks matching this regexp (go test -run)")
	return c
}

// runKits runs the kits against the plugin binary bin, reporting as go
// test does, and returns the exit code.
func runKits(out io.Writer, bin string, verbose bool, run string) int {
	r := &kitRun{name: "Conformance", out: &syncWriter{w: out}, verbose: verbose, pattern: strings.Split(run, "/")}
	if run == "" {
		r.pattern = nil
	}
	r.Run("", func(t *kitRun) {
		sandboxes, agents := plugintest.Binary(t, bin)
		if len(sandboxes)+len(agents) == 0 {
			t.Fatalf("the plugin serves no components")
		}
		for _, name := range slices.Sorted(maps.Keys(sandboxes)) {
			plugintest.Run(t, "sandbox/"+name, func(t plugintest.T) { sandboxtest.RunBinary(t, bin, name, sandboxtest.Options{}) })
		}
		for _, name := range slices.Sorted(maps.Keys(agents)) {
			plugintest.Run(t, "agent/"+name, func(t plugintest.T) { agenttest.RunBinary(t, bin, name, cty.NilVal) })
		}
	})
	if r.failed.Load() {
		fmt.Fprintln(out, "FAIL")
		return 1
	}
	fmt.Fprintln(out, "PASS")
	return 0
}

// kitRun is one check of `plugins test` and the plugintest.T the kits
// report to: a runner of their checks without the testing package, with go
// test's output (--- PASS/FAIL/SKIP lines, the log of failed checks, all
// with -v) and its -run matching (one regexp per level of the name).
type kitRun struct {
	name    string
	out     io.Writer
	verbose bool
	pattern []string // the -run regexps of this level and below
	depth   int      // of the name, in '/'-separated elements below Conformance
	parent  *kitRun

	failed, skipped atomic.Bool
	mu              sync.Mutex
	log             strings.Builder
	cleanups        []func()
	tmp             string
	tmps            int
}

func (r *kitRun) Helper() {}

func (r *kitRun) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n") {
		fmt.Fprintf(&r.log, "    %s\n", l)
	}
}

func (r *kitRun) Errorf(format string, args ...any) { r.Logf(format, args...); r.fail() }
func (r *kitRun) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *kitRun) Skipf(format string, args ...any) {
	r.Logf(format, args...)
	r.skipped.Store(true)
	runtime.Goexit()
}

// fail marks r and the checks it belongs to failed.
func (r *kitRun) fail() {
	for p := r; p != nil; p = p.parent {
		p.failed.Store(true)
	}
}

func (r *kitRun) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// TempDir returns a new directory, removed when the check ends.
func (r *kitRun) TempDir() string {
	r.mu.Lock()
	if r.tmp == "" {
		r.tmp, _ = os.MkdirTemp("", "sanddune-plugins-test-")
		tmp := r.tmp
		r.cleanups = append(r.cleanups, func() { _ = os.RemoveAll(tmp) })
	}
	r.tmps++
	dir := filepath.Join(r.tmp, strconv.Itoa(r.tmps))
	r.mu.Unlock()
	if err := os.Mkdir(dir, 0o700); err != nil {
		r.Fatalf("TempDir: %v", err)
	}
	return dir
}

// Run runs f as the check name below r, in its own goroutine (Fatal and
// Skip end it), unless -run leaves it out, and reports whether it passed.
// An empty name runs f as r itself.
func (r *kitRun) Run(name string, f func(*kitRun)) bool {
	c := r
	if name != "" {
		elems := strings.Split(name, "/")
		for i, e := range elems {
			if d := r.depth + i; d < len(r.pattern) {
				if ok, err := regexp.MatchString(r.pattern[d], e); err != nil || !ok {
					return true
				}
			}
		}
		c = &kitRun{name: r.name + "/" + name, out: r.out, verbose: r.verbose, pattern: r.pattern, depth: r.depth + len(elems), parent: r}
	}
	if c.verbose {
		fmt.Fprintf(c.out, "=== RUN   %s\n", c.name)
	}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				c.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		f(c)
	}()
	<-done
	c.mu.Lock()
	cleanups := c.cleanups
	c.cleanups = nil
	c.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	status := "PASS"
	switch {
	case c.failed.Load():
		status = "FAIL"
	case c.skipped.Load():
		status = "SKIP"
	}
	if c.verbose || status == "FAIL" {
		c.mu.Lock()
		fmt.Fprintf(c.out, "--- %s: %s (%.2fs)\n%s", status, c.name, time.Since(start).Seconds(), c.log.String())
		c.mu.Unlock()
	}
	return !c.failed.Load()
}

// syncWriter serialises the writes of goroutines (a plugin test's
// checks, the runs), to a writer that can be switched.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
