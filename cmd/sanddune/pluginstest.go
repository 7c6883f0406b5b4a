package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/missingstudio/sanddune/sdk/host"
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
block). The output is go test's; exit 1 when a check fails. BINARY runs with your
rights: test only binaries you trust.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := filepath.Abs(args[0])
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() {
				return &exitError{code: exitUsage, err: fmt.Errorf("%s is not a plugin binary: %v", args[0], err)}
			}
			if code := runKits(bin, verbose, run); code != 0 {
				return &exitError{code: exitFailure, err: fmt.Errorf("%s does not pass the conformance kit (see above)", args[0])}
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every check (go test -v)")
	c.Flags().StringVar(&run, "run", "", "run only the checks matching this regexp (go test -run)")
	return c
}

// runKits runs the kits as a go test binary would, through the testing
// package's MainStart, and returns its exit code.
func runKits(bin string, verbose bool, run string) int {
	test := func(t *testing.T) {
		comps, err := host.CatalogComponents(context.Background(), plugintest.Binary(t, bin))
		if err != nil {
			t.Fatalf("Catalog: %v", err)
		}
		if len(comps) == 0 {
			t.Fatal("the plugin serves no components")
		}
		for _, c := range comps {
			name := c.Info.Name
			switch c.Info.Kind {
			case sdk.KindSandbox:
				t.Run("sandbox/"+name, func(t *testing.T) { sandboxtest.RunBinary(t, bin, name, sandboxtest.Options{}) })
			case sdk.KindAgent:
				t.Run("agent/"+name, func(t *testing.T) { agenttest.RunBinary(t, bin, name, cty.NilVal) })
			default:
				t.Errorf("component %q has unknown kind %q", name, c.Info.Kind)
			}
		}
	}
	args := []string{os.Args[0], "-test.count=1"}
	if verbose {
		args = append(args, "-test.v")
	}
	if run != "" {
		args = append(args, "-test.run=Conformance/"+run)
	}
	saved := os.Args
	os.Args = args
	defer func() { os.Args = saved }()
	m := testing.MainStart(kitDeps{}, []testing.InternalTest{{Name: "Conformance", F: test}}, nil, nil, nil)
	return m.Run()
}

// kitDeps is what testing.MainStart needs of a test binary: matching -run,
// and nothing of profiling, fuzzing or coverage.
type kitDeps struct{}

func (kitDeps) ImportPath() string { return "sanddune/plugins-test" }
func (kitDeps) ModulePath() string { return "" }
func (kitDeps) MatchString(pat, str string) (bool, error) {
	return regexp.MatchString(pat, str)
}
func (kitDeps) SetPanicOnExit0(bool)                        {}
func (kitDeps) StartCPUProfile(io.Writer) error             { return errors.New("not supported") }
func (kitDeps) StopCPUProfile()                             {}
func (kitDeps) StartTestLog(io.Writer)                      {}
func (kitDeps) StopTestLog() error                          { return nil }
func (kitDeps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (kitDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errors.New("not supported")
}
func (kitDeps) RunFuzzWorker(func(corpusEntry) error) error { return errors.New("not supported") }
func (kitDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, nil
}
func (kitDeps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (kitDeps) ResetCoverage()                          {}
func (kitDeps) SnapshotCoverage()                       {}
func (kitDeps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

// corpusEntry mirrors the testing package's (an alias of this struct).
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}
