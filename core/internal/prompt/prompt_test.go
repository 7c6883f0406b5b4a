package prompt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func load(t *testing.T, text string, args map[string]string) (*Template, error) {
	t.Helper()
	return Load(Source{File: "prompt.md", BaseDir: writeFile(t, text), Args: args})
}

func TestLoadSourceRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  Source
		want string
	}{
		{"both", Source{Inline: "x", File: "y"}, "not both"},
		{"neither", Source{}, "set one of"},
		{"inline with args", Source{Inline: "x", Args: map[string]string{"A": "1"}}, "prompt_args only work with prompt_file"},
		{"missing file", Source{File: "nope.md", BaseDir: t.TempDir()}, "nope.md: cannot read it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestInlinePromptIsLiteral(t *testing.T) {
	t.Parallel()
	tpl, err := Load(Source{Inline: "fix {{ISSUE}} and !`rm -rf /` {{SOURCE_BRANCH}}"})
	if err != nil {
		t.Fatal(err)
	}
	p := tpl.Fill("src", "dst", nil)
	if len(p.Expressions()) != 0 {
		t.Fatal("inline prompt must have no shell expressions")
	}
	got, err := p.Render(context.Background(), nil, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "fix {{ISSUE}} and !`rm -rf /` {{SOURCE_BRANCH}}" {
		t.Fatalf("got %q", got)
	}
}

func TestSubstitution(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "Issue {{ ISSUE }} and {{ISSUE}} on {{SOURCE_BRANCH}} -> {{\tTARGET_BRANCH}} by {{WHO_2}}", map[string]string{"ISSUE": "42", "WHO_2": "me"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tpl.Warnings) != 0 {
		t.Fatalf("warnings: %v", tpl.Warnings)
	}
	got, err := tpl.Fill("sanddune/x/1", "main", nil).Render(context.Background(), nil, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Issue 42 and 42 on sanddune/x/1 -> main by me"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestMissingKeyNamesKeyAndFile(t *testing.T) {
	t.Parallel()
	_, err := load(t, "a {{FIRST}} {{SECOND}}", map[string]string{"SECOND": "x"})
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "{{FIRST}}") || !strings.Contains(err.Error(), "prompt.md") {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingKeyInsideShellExpression(t *testing.T) {
	t.Parallel()
	_, err := load(t, "!`gh issue view {{N}}`", nil)
	if err == nil || !strings.Contains(err.Error(), "{{N}}") {
		t.Fatalf("err = %v", err)
	}
}

func TestUnusedKeyWarns(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "hello", map[string]string{"B": "1", "A": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tpl.Warnings) != 2 || !strings.Contains(tpl.Warnings[0], `"A"`) {
		t.Fatalf("warnings = %v", tpl.Warnings)
	}
}

func TestBuiltinOverrideRejected(t *testing.T) {
	t.Parallel()
	for _, k := range []string{SourceBranch, TargetBranch} {
		_, err := load(t, "x", map[string]string{k: "evil"})
		if err == nil || !strings.Contains(err.Error(), "built-in") || !strings.Contains(err.Error(), k) {
			t.Fatalf("%s: err = %v", k, err)
		}
	}
}

func TestRelativeFileResolvesAgainstBaseDir(t *testing.T) {
	t.Parallel()
	dir := writeFile(t, "from base")
	tpl, err := Load(Source{File: "prompt.md", BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if tpl.File != filepath.Join(dir, "prompt.md") {
		t.Fatalf("file = %s", tpl.File)
	}
}

// shellFake runs commands with the host's sh in a directory: a stand-in
// for a sandbox's Exec.
type shellFake struct {
	dir     string
	running atomic.Int32
	peak    atomic.Int32
}

func (f *shellFake) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", req.Shell)
	cmd.Dir = f.dir
	// Like a provider, a timeout kills the whole group: sh's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process.Pid) }
	cmd.WaitDelay = 10 * time.Second // a safety net for pipes a stray child keeps open, not a deadline
	cmd.Env = os.Environ()
	for k, v := range req.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return sdk.ExecResult{TimedOut: true, ExitCode: -1}, nil
	}
	for _, s := range []struct {
		b  *bytes.Buffer
		st sdk.Stream
	}{{&stdout, sdk.Stdout}, {&stderr, sdk.Stderr}} {
		sc := bufio.NewScanner(s.b)
		for sc.Scan() {
			out(sdk.OutputLine{Stream: s.st, Text: sc.Bytes()})
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return sdk.ExecResult{ExitCode: ee.ExitCode()}, nil
	}
	return sdk.ExecResult{}, err
}

func TestRenderShellExpressionsFake(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "A:!`echo one`\nB:!`printf 'two\\n\\n'`\nC:!`echo {{X}} on {{SOURCE_BRANCH}}`", map[string]string{"X": "x y  z"})
	if err != nil {
		t.Fatal(err)
	}
	f := &shellFake{dir: t.TempDir()}
	var expanded atomic.Int32
	got, err := tpl.Fill("feat/a", "main", nil).Render(context.Background(), f, RenderOptions{Expanded: func(string, int) { expanded.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := "A:one\nB:two\nC:x y  z on feat/a"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if expanded.Load() != 3 {
		t.Fatalf("expanded %d", expanded.Load())
	}
}

func TestRenderRunsInParallelFake(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "!`sleep 0.3`!`sleep 0.3`!`sleep 0.3`", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &shellFake{dir: t.TempDir()}
	if _, err := tpl.Fill("a", "b", nil).Render(context.Background(), f, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if f.peak.Load() < 2 {
		t.Fatalf("peak concurrency %d, want parallel", f.peak.Load())
	}
}

func TestHostileArgumentIsInertFake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	hostile := "!`touch " + marker + "` $(touch " + marker + ") `touch " + marker + "`; touch " + marker + " ' \" {{X}}"
	tpl, err := load(t, "Title: {{X}}\nq:!`printf '%s' '{{X}}'`\nd:!`printf '%s' \"{{X}}\"`\nu:!`printf '%s' {{X}}`", map[string]string{"X": hostile})
	if err != nil {
		t.Fatal(err)
	}
	f := &shellFake{dir: dir}
	got, err := tpl.Fill("a", "b", nil).Render(context.Background(), f, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("hostile argument value was executed")
	}
	want := "Title: " + hostile + "\nq:" + hostile + "\nd:" + hostile + "\nu:" + hostile
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestExpressionOutputIsNotRescannedFake(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "!`printf '!\\140touch pwned\\140 \\173\\173X\\175\\175'`", map[string]string{"X": "v"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got, err := tpl.Fill("a", "b", nil).Render(context.Background(), &shellFake{dir: dir}, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "!`touch pwned` {{X}}" {
		t.Fatalf("got %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("expression output was executed")
	}
}

func TestExpressionFailureShowsExpressionAndStderrFake(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "ok !`echo fine` bad !`echo boom >&2; exit 3`", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Fill("a", "b", nil).Render(context.Background(), &shellFake{dir: t.TempDir()}, RenderOptions{})
	var ee *ExpressionError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || !strings.Contains(err.Error(), "echo boom >&2; exit 3") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
}

func TestExpressionTimeoutFake(t *testing.T) {
	t.Parallel()
	tpl, err := load(t, "!`sleep 5`", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Fill("a", "b", nil).Render(context.Background(), &shellFake{dir: t.TempDir()}, RenderOptions{Timeout: 50 * time.Millisecond})
	var ee *ExpressionError
	if !errors.As(err, &ee) || !ee.TimedOut || !strings.Contains(err.Error(), "sleep 5") {
		t.Fatalf("err = %v", err)
	}
}

func TestQuotePlaceholders(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"echo {{A}}", `echo "${SANDDUNE_ARG_A}"`},
		{`echo "x {{A}}"`, `echo "x ${SANDDUNE_ARG_A}"`},
		{`echo 'x {{A}}'`, `echo 'x '"${SANDDUNE_ARG_A}"''`},
		{`echo \"{{A}}`, `echo \""${SANDDUNE_ARG_A}"`},
		{`echo "it's {{A}}"`, `echo "it's ${SANDDUNE_ARG_A}"`},
	}
	for _, c := range cases {
		got, _ := quotePlaceholders(c.in)
		if got != c.want {
			t.Errorf("%s: got %s want %s", c.in, got, c.want)
		}
	}
}

// TestMissingKeyAsked: an interactive session asks for each missing key
// once, in order, and the answer fills the placeholder.
func TestMissingKeyAsked(t *testing.T) {
	args := map[string]string{"GIVEN": "g"}
	var asked []string
	tpl, err := Load(Source{File: "prompt.md", BaseDir: writeFile(t, "{{B}} {{GIVEN}} {{A}} {{B}} {{SOURCE_BRANCH}}"), Args: args,
		Ask: func(key string) (string, error) {
			asked = append(asked, key)
			return strings.ToLower(key) + "!", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"B", "A"}; !slices.Equal(asked, want) {
		t.Errorf("asked for %q, want %q", asked, want)
	}
	got, err := tpl.Fill("src", "dst", nil).Render(context.Background(), nil, RenderOptions{})
	if err != nil || got != "b! g a! b! src" {
		t.Errorf("rendered %q, %v", got, err)
	}
	if len(args) != 1 {
		t.Errorf("the caller's prompt_args changed: %v", args)
	}
	_, err = Load(Source{File: "prompt.md", BaseDir: writeFile(t, "{{X}}"),
		Ask: func(string) (string, error) { return "", errors.New("stdin is not a terminal") }})
	if err == nil || !strings.Contains(err.Error(), "{{X}}") || !strings.Contains(err.Error(), "stdin is not a terminal") {
		t.Errorf("a failed ask: %v", err)
	}
}

func TestLoadReadsRegularFilesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", big: "more than the limit of 1 MiB"} {
		if _, err := Load(Source{File: path}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
