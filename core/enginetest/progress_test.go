package enginetest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// queuedCreate is the local sandbox provider whose Create first reports
// that it waits in a queue, then that it left it.
type queuedCreate struct{ sdk.SandboxProvider }

func (q queuedCreate) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	req.Report(sdk.Progress{Waiting: true, Message: "queued behind 1 running sandbox (max_concurrent 1)"})
	req.Report(sdk.Progress{Message: "left the queue"})
	return q.SandboxProvider.Create(ctx, req)
}

// TestSandboxProgressIsShownAndObserved: what a sandbox provider reports
// during Create (over the plugin protocol) shows in the run's progress
// output, "waiting: " first when it waits, and reaches OnSandboxProgress
// (--events) in order, named by the run. In file mode the waiting report
// and the one after it also reach the terminal, so a queued run does not
// look hung.
func TestSandboxProgressIsShownAndObserved(t *testing.T) {
	for _, mode := range []core.LogMode{core.LogStdout, core.LogFile} {
		t.Run(string(mode), func(t *testing.T) {
			repo := newRepo(t)
			var term buffer
			sb := core.SandboxRef{Address: "sandbox.local.test", Plugin: "local",
				Provider: plugintest.Sandbox(t, queuedCreate{local.New()}), Config: sdk.Config{Value: cty.EmptyObjectVal}}
			o := options(repo, sb, commandAgent(t, "cat > /dev/null"), &term)
			o.Logging.Mode = mode
			var mu sync.Mutex
			var got []core.SandboxProgress
			o.OnSandboxProgress = func(p core.SandboxProgress) {
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			}
			res := run(t, o)

			want := []sdk.Progress{
				{Waiting: true, Message: "queued behind 1 running sandbox (max_concurrent 1)"},
				{Message: "left the queue"},
			}
			var reports []sdk.Progress
			for _, p := range got {
				if p.Run != "test" || p.Time.IsZero() {
					t.Errorf("report %+v: want run test and a time", p)
				}
				reports = append(reports, p.Progress)
			}
			if !slices.Equal(reports, want) {
				t.Errorf("observed %+v, want %+v", reports, want)
			}
			lines := []string{
				"[test] waiting: queued behind 1 running sandbox (max_concurrent 1)",
				"[test] left the queue",
			}
			out := term.String()
			for _, l := range lines {
				if !strings.Contains(out, l+"\n") {
					t.Errorf("terminal lacks %q:\n%s", l, out)
				}
			}
			if mode == core.LogFile {
				log := readLog(t, res)
				if !strings.Contains(log, "waiting: queued behind 1 running sandbox") || !strings.Contains(log, "left the queue") {
					t.Errorf("log file lacks the reports:\n%s", log)
				}
			}
		})
	}
}
