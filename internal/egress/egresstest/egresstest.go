// Package egresstest helps the tests of the providers that enforce egress.
package egresstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
)

// WithEnforcer runs a test binary's tests (m.Run) with the egress enforcer
// built, static as installed, into a temporary directory put first on
// PATH, where the providers find it. Without a go command (a test binary
// run again as another user), the tests run as they are.
func WithEnforcer(m *testing.M) int {
	if _, err := exec.LookPath("go"); err != nil || os.Getenv(builtEnv) != "" {
		return m.Run() // no go, or the test binary run again by its own test: PATH has the enforcer
	}
	dir, err := os.MkdirTemp("", "sanddune-egress-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // tests may run providers as another user
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, egress.BinaryName), "github.com/missingstudio/sanddune/cmd/"+egress.BinaryName)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the egress enforcer: %v\n%s", err, out)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	os.Setenv(builtEnv, dir)
	return m.Run()
}

// builtEnv names the enforcer's directory once WithEnforcer built it: a
// test binary a test starts again (a helper process, which may be killed
// before it could clean up) uses that one instead of building its own.
const builtEnv = "SANDDUNE_TEST_EGRESS_ENFORCER_DIR"

// Watcher collects what a sandbox's WatchEgress reports.
type Watcher struct {
	mu     sync.Mutex
	denied []sdk.EgressDenial
	cancel context.CancelFunc
	done   chan error
}

// Watch watches sb's refusals until Stop.
func Watch(t testing.TB, sb sdk.Sandbox) *Watcher {
	t.Helper()
	ew, ok := sb.(sdk.EgressWatcher)
	if !ok {
		t.Fatalf("the sandbox (%T) does not implement sdk.EgressWatcher", sb)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{cancel: cancel, done: make(chan error, 1)}
	go func() {
		w.done <- ew.WatchEgress(ctx, func(d sdk.EgressDenial) {
			w.mu.Lock()
			w.denied = append(w.denied, d)
			w.mu.Unlock()
		})
	}()
	return w
}

// Expect fails the test unless every refusal of want (Host, Port, Proto)
// is reported, with a reason, within half a minute.
func (w *Watcher) Expect(t testing.TB, want ...sdk.EgressDenial) {
	t.Helper()
	missing := want
	for deadline := time.Now().Add(30 * time.Second); len(missing) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		missing = slices.DeleteFunc(slices.Clone(want), func(x sdk.EgressDenial) bool {
			return slices.ContainsFunc(w.denied, func(d sdk.EgressDenial) bool {
				return d.Host == x.Host && d.Port == x.Port && d.Proto == x.Proto && d.Reason != ""
			})
		})
		w.mu.Unlock()
	}
	if len(missing) > 0 {
		w.mu.Lock()
		defer w.mu.Unlock()
		t.Errorf("refusals not reported: %+v (reported: %+v)", missing, w.denied)
	}
}

// Stop ends the watch; WatchEgress must return nil.
func (w *Watcher) Stop(t testing.TB) {
	t.Helper()
	w.cancel()
	if err := <-w.done; err != nil {
		t.Errorf("WatchEgress: %v", err)
	}
}
