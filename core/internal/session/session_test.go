package session

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// fakeSandbox is a sandbox whose paths are real host paths under a temp
// dir: Exec runs argv directly, CopyIn/CopyOut copy files.
type fakeSandbox struct {
	repo, home string
	execs      atomic.Int32
	copies     atomic.Int32 // CopyIn and CopyOut calls
}

func (f *fakeSandbox) Info() sdk.SandboxInfo {
	return sdk.SandboxInfo{ID: "fake", RepoPath: f.repo, HomePath: f.home}
}

func (f *fakeSandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	f.execs.Add(1)
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir = f.repo
	cmd.Env = append(os.Environ(), "HOME="+f.home, "LC_ALL=C")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = &lineWriter{out: out}
	if err := cmd.Start(); err != nil {
		return sdk.ExecResult{}, err
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out(sdk.OutputLine{Stream: sdk.Stdout, Text: sc.Bytes()})
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return sdk.ExecResult{ExitCode: ee.ExitCode()}, nil
	}
	return sdk.ExecResult{}, err
}

type lineWriter struct{ out sdk.OutputFunc }

func (w *lineWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		w.out(sdk.OutputLine{Stream: sdk.Stderr, Text: []byte(l)})
	}
	return len(b), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(o, in)
	return errors.Join(err, o.Close())
}

func (f *fakeSandbox) CopyIn(_ context.Context, hostPath, sandboxPath string) error {
	f.copies.Add(1)
	return copyFile(hostPath, sandboxPath)
}

func (f *fakeSandbox) CopyOut(_ context.Context, sandboxPath, hostPath string) error {
	f.copies.Add(1)
	if st, err := os.Stat(sandboxPath); err == nil && st.IsDir() {
		return os.CopyFS(hostPath, os.DirFS(sandboxPath))
	}
	return copyFile(sandboxPath, hostPath)
}

func (f *fakeSandbox) Close(context.Context) error { return nil }

// fakeAgent rewrites cwd fields like the claude, codex and pi plugins do,
// and encodes a cwd with encode (sdk.CwdEncoder).
type fakeAgent struct {
	sdk.AgentProvider
	encode func(string) string
}

func (a fakeAgent) EncodeCwd(_ context.Context, cwd string) (string, error) {
	return a.encode(cwd), nil
}

// agentFor is a fakeAgent that encodes cwds as the CLI storing sessions at s.
func agentFor(s sdk.SessionStorage) fakeAgent {
	switch s {
	case claudeStorage:
		return fakeAgent{encode: agentkit.EncodeClaudeCwd}
	case piStorage:
		return fakeAgent{encode: agentkit.EncodePiCwd}
	}
	return fakeAgent{encode: func(string) string { return "unused" }}
}

func (fakeAgent) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "fakeagent", Kind: sdk.KindAgent, Version: "0.0.1"}, nil
}

func (fakeAgent) ConfigSchema(context.Context) (sdk.Schema, error) { return sdk.Schema{}, nil }

func (fakeAgent) RewriteSession(ctx context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	return agentkit.Base{SessionFields: []string{"cwd", "payload.cwd"}}.RewriteSession(ctx, req)
}

type env struct {
	sb                 *fakeSandbox
	hostRepo, hostHome string
}

// newEnv makes a host repo and a sandbox whose paths hold dots,
// underscores and spaces.
func newEnv(t *testing.T) env {
	root := t.TempDir()
	e := env{
		sb:       &fakeSandbox{repo: filepath.Join(root, "sandbox", "work space.v2"), home: filepath.Join(root, "sandbox", "home")},
		hostRepo: filepath.Join(root, "host", "my repo_v1.2"),
		hostHome: filepath.Join(root, "host", "home"),
	}
	for _, d := range []string{e.sb.repo, e.sb.home, e.hostRepo, e.hostHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e env) transfer(s sdk.SessionStorage, id string) Transfer {
	return Transfer{Sandbox: e.sb, Agent: agentFor(s), Storage: s, SessionID: id, HostRepo: e.hostRepo, HostHome: e.hostHome}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	claudeStorage = sdk.SessionStorage{PathPattern: "{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl"}
	codexStorage  = sdk.SessionStorage{PathPattern: "{home}/.codex/sessions/*/*/*/rollout-*-{session_id}.jsonl"}
	piStorage     = sdk.SessionStorage{PathPattern: "{home}/.pi/agent/sessions/{cwd_encoded}/*_{session_id}.jsonl"}
)

func TestClaudeCaptureResumeRoundTripFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48"
	sbFile := filepath.Join(e.sb.home, ".claude", "projects", agentkit.EncodeClaudeCwd(e.sb.repo), id+".jsonl")
	original := `{"type":"user","cwd":"` + e.sb.repo + `","sessionId":"` + id + `"}` + "\n" +
		`{"type":"assistant","cwd":"` + e.sb.repo + `/src","sessionId":"` + id + `"}` + "\n" +
		`{"type":"user","cwd":"` + e.sb.repo // torn last line
	write(t, sbFile, original)
	subagent := `{"type":"user","cwd":"` + e.sb.repo + `","isSidechain":true}` + "\n"
	write(t, filepath.Join(filepath.Dir(sbFile), id, "subagents", "agent-a1.jsonl"), subagent)

	hostPath, err := Capture(context.Background(), e.transfer(claudeStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	if n := e.sb.execs.Load(); n != 0 {
		t.Errorf("capture of a session at a known path ran %d commands in the sandbox, want none (copies only)", n)
	}
	// Claude's own encoding of the host cwd: every non-alphanumeric is '-'.
	enc := agentkit.EncodeClaudeCwd(e.hostRepo)
	if !strings.HasSuffix(enc, "-host-my-repo-v1-2") {
		t.Fatalf("encoded host cwd %q", enc)
	}
	if want := filepath.Join(e.hostHome, ".claude", "projects", enc, id+".jsonl"); hostPath != want {
		t.Fatalf("host path %q, want %q", hostPath, want)
	}
	// Whole lines are rewritten (subdirectories too); the torn one is kept.
	want := strings.Replace(original, `"cwd":"`+e.sb.repo, `"cwd":"`+e.hostRepo, 2)
	if got := read(t, hostPath); got != want {
		t.Errorf("captured\n%s\nwant\n%s", got, want)
	}
	if got := read(t, filepath.Join(filepath.Dir(hostPath), id, "subagents", "agent-a1.jsonl")); !strings.Contains(got, `"cwd":"`+e.hostRepo+`"`) {
		t.Errorf("subagent transcript not captured with host cwd: %s", got)
	}
	if st, _ := os.Stat(hostPath); st.Mode().Perm() != 0o600 {
		t.Errorf("host session file mode %v, want 0600", st.Mode().Perm())
	}

	// Resume into a fresh sandbox at the same paths.
	if err := os.RemoveAll(filepath.Join(e.sb.home, ".claude")); err != nil {
		t.Fatal(err)
	}
	if _, err := FindHost(context.Background(), agentFor(claudeStorage), claudeStorage, e.hostRepo, e.hostHome, id); err != nil {
		t.Fatal(err)
	}
	sbPath, err := PrepareResume(context.Background(), e.transfer(claudeStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	if sbPath != sbFile {
		t.Errorf("sandbox path %q, want %q", sbPath, sbFile)
	}
	if got := read(t, sbFile); got != original {
		t.Errorf("resumed\n%s\nwant\n%s", got, original)
	}
	if got := read(t, filepath.Join(filepath.Dir(sbFile), id, "subagents", "agent-a1.jsonl")); got != subagent {
		t.Errorf("subagent transcript resumed as %q", got)
	}
}

func TestCodexCaptureResumeRoundTripFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "019e8c41-7a2b-7d13-9c55-6f0e2b8a4d17"
	rel := filepath.Join("2026", "07", "01", "rollout-2026-07-01T10-00-00-"+id+".jsonl")
	sbFile := filepath.Join(e.sb.home, ".codex", "sessions", rel)
	original := `{"timestamp":"t","type":"session_meta","payload":{"id":"` + id + `","cwd":"` + e.sb.repo + `"}}` + "\n" +
		`{"timestamp":"t","type":"turn_context","payload":{"cwd":"` + e.sb.repo + `","model":"gpt-5.4"}}` + "\n"
	write(t, sbFile, original)
	write(t, filepath.Join(e.sb.home, ".codex", "sessions", "2026", "07", "01", "rollout-2026-07-01T09-00-00-other.jsonl"), "{}\n")

	hostPath, err := Capture(context.Background(), e.transfer(codexStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.hostHome, ".codex", "sessions", rel); hostPath != want {
		t.Fatalf("host path %q, want %q (date directories and name kept)", hostPath, want)
	}
	if got, want := read(t, hostPath), strings.ReplaceAll(original, e.sb.repo, e.hostRepo); got != want {
		t.Errorf("captured\n%s\nwant\n%s", got, want)
	}

	if err := os.RemoveAll(filepath.Join(e.sb.home, ".codex")); err != nil {
		t.Fatal(err)
	}
	sbPath, err := PrepareResume(context.Background(), e.transfer(codexStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	if sbPath != sbFile || read(t, sbFile) != original {
		t.Errorf("resumed to %q: %s", sbPath, read(t, sbPath))
	}
}

func TestPiCaptureResumeRoundTripFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "019e8c52-3b4c-7e25-8d66-7a1f3c9b5e28"
	name := "2026-07-01T10-20-00-000Z_" + id + ".jsonl"
	sbFile := filepath.Join(e.sb.home, ".pi", "agent", "sessions", agentkit.EncodePiCwd(e.sb.repo), name)
	original := `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-07-01T10:20:00.000Z","cwd":"` + e.sb.repo + `"}` + "\n" +
		`{"type":"message","id":"a1b2c3d4","parentId":null,"message":{"role":"user","content":[]}}` + "\n"
	write(t, sbFile, original)

	hostPath, err := Capture(context.Background(), e.transfer(piStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Base(filepath.Dir(hostPath))
	if !strings.HasPrefix(dir, "--") || !strings.HasSuffix(dir, "-host-my repo_v1.2--") || filepath.Base(hostPath) != name {
		t.Fatalf("host path %q: want --<host cwd>--/%s", hostPath, name)
	}
	if got, want := read(t, hostPath), strings.ReplaceAll(original, e.sb.repo, e.hostRepo); got != want {
		t.Errorf("captured\n%s\nwant\n%s", got, want)
	}

	// A newer capture of the same id wins on resume.
	time.Sleep(10 * time.Millisecond)
	newer := filepath.Join(filepath.Dir(hostPath), "2026-07-02T00-00-00-000Z_"+id+".jsonl")
	write(t, newer, strings.ReplaceAll(original, e.sb.repo, e.hostRepo))
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(newer, future, future); err != nil {
		t.Fatal(err)
	}
	sbPath, err := PrepareResume(context.Background(), e.transfer(piStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(sbFile), filepath.Base(newer)); sbPath != want {
		t.Errorf("resumed to %q, want %q", sbPath, want)
	}
	if got := read(t, sbPath); got != original {
		t.Errorf("resumed\n%s\nwant\n%s", got, original)
	}
}

func TestNotFoundFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "0b7e4c1e-missing"
	_, err := Capture(context.Background(), e.transfer(claudeStorage, id))
	var nf *NotFoundError
	if !errors.As(err, &nf) || !nf.InSandbox || !strings.Contains(err.Error(), id) {
		t.Errorf("Capture of a missing session: %v", err)
	}
	_, err = PrepareResume(context.Background(), e.transfer(codexStorage, id))
	if !errors.As(err, &nf) || nf.InSandbox {
		t.Fatalf("PrepareResume of a missing session: %v", err)
	}
	want := filepath.Join(e.hostHome, ".codex", "sessions") + "/*/*/*/rollout-*-" + id + ".jsonl"
	if nf.Path != want || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"`+id+`"`) {
		t.Errorf("error %q should name %s and the id", err, want)
	}
	if _, err := FindHost(context.Background(), agentFor(claudeStorage), claudeStorage, e.hostRepo, e.hostHome, "../../etc/passwd"); err == nil || errors.As(err, &nf) {
		t.Errorf("path-like session id: %v", err)
	}
}

func TestCheckResumeAndCaptureEnabled(t *testing.T) {
	t.Parallel()
	claude := sdk.AgentDescription{Sessions: &claudeStorage, Resume: true, Fork: true}
	noFork := sdk.AgentDescription{Sessions: &claudeStorage, Resume: true}
	if CheckResume(claude, true) != nil || CheckResume(noFork, false) != nil {
		t.Error("supported resume rejected")
	}
	if !errors.Is(CheckResume(noFork, true), ErrForkUnsupported) || !errors.Is(CheckResume(sdk.AgentDescription{}, false), ErrResumeUnsupported) {
		t.Error("unsupported resume accepted")
	}
	capture := claude
	capture.CaptureSessions = true
	if !CaptureEnabled(capture) || CaptureEnabled(claude) || CaptureEnabled(sdk.AgentDescription{CaptureSessions: true}) {
		t.Error("CaptureEnabled")
	}
}

// TestLargeSessionOverGRPCFake rewrites a session bigger than gRPC's
// default 4 MiB message limit through a real plugin connection.
func TestLargeSessionOverGRPCFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "3f6c2a9e-large"
	line := `{"type":"assistant","cwd":"` + e.sb.repo + `","message":"` + strings.Repeat("x", 1<<20) + `"}` + "\n"
	original := strings.Repeat(line, 6)
	write(t, filepath.Join(e.sb.home, ".claude", "projects", agentkit.EncodeClaudeCwd(e.sb.repo), id+".jsonl"), original)
	tr := e.transfer(claudeStorage, id)
	tr.Agent = plugintest.Agent(t, agentFor(claudeStorage))
	hostPath, err := Capture(context.Background(), tr)
	if err != nil && strings.Contains(err.Error(), "larger than max") {
		t.Skipf("SKIPPED LOUDLY: sdk/plugintest's in-process gRPC server keeps the 4 MiB default message limit (sdk.Serve raises it): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, hostPath); got != strings.ReplaceAll(original, e.sb.repo, e.hostRepo) {
		t.Errorf("large session corrupted (%d bytes)", len(got))
	}
}

func TestGlobCharactersInPathsFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sb.repo = filepath.Join(filepath.Dir(e.sb.repo), "we[ir]d*repo?")
	e.hostRepo = filepath.Join(filepath.Dir(e.hostRepo), "host [x]*")
	for _, d := range []string{e.sb.repo, e.hostRepo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const id = "019e8c52-glob"
	write(t, filepath.Join(e.sb.home, ".pi", "agent", "sessions", agentkit.EncodePiCwd(e.sb.repo), "2026_"+id+".jsonl"), `{"type":"session","cwd":"`+e.sb.repo+`"}`+"\n")
	// A decoy the unescaped glob would match.
	write(t, filepath.Join(e.sb.home, ".pi", "agent", "sessions", "--decoy--", "2026_"+id+".jsonl"), "{}\n")
	hostPath, err := Capture(context.Background(), e.transfer(piStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.hostHome, ".pi", "agent", "sessions", agentkit.EncodePiCwd(e.hostRepo), "2026_"+id+".jsonl"); hostPath != want {
		t.Fatalf("host path %q, want %q", hostPath, want)
	}
	if got := read(t, hostPath); got != `{"type":"session","cwd":"`+e.hostRepo+`"}`+"\n" {
		t.Errorf("captured %s", got)
	}
	if found, err := FindHost(context.Background(), agentFor(piStorage), piStorage, e.hostRepo, e.hostHome, id); err != nil || found != hostPath {
		t.Errorf("FindHost = %q, %v", found, err)
	}
}

// TestExpandIDPrefix: {session_id:N} is the id's first N characters, as
// the Gemini CLI names its session files.
func TestExpandIDPrefix(t *testing.T) {
	t.Parallel()
	sd := side{home: "/home/a", cwd: "/w"}
	for id, want := range map[string]string{"3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48": "/home/a/session-*-3f6c2a9e.jsonl", "abc": "/home/a/session-*-abc.jsonl"} {
		p, err := expand(context.Background(), fakeAgent{}, sdk.SessionStorage{PathPattern: "{home}/session-*-{session_id:8}.jsonl"}, sd, id)
		if err != nil || p.String() != want {
			t.Errorf("expand for %s = %q, %v; want %q", id, p, err, want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	t.Parallel()
	sd := side{home: "/home/a", cwd: "/w"}
	for _, p := range []string{"{home}/{nope}/x", "{home}/{unclosed", "relative/{session_id}", "{home}/{session_id:0}", "{home}/{session_id:x}", "{home}/x"} {
		_, err := expand(context.Background(), fakeAgent{}, sdk.SessionStorage{PathPattern: p}, sd, "id")
		if (err == nil) != (p == "{home}/x") {
			t.Errorf("expand(%q): %v", p, err)
		}
	}
	encoded := sdk.SessionStorage{PathPattern: "{home}/{cwd_encoded}"}
	if _, err := expand(context.Background(), struct{ sdk.AgentProvider }{}, encoded, sd, "id"); err == nil {
		t.Error("{cwd_encoded} expanded for an agent without a CwdEncoder")
	}
	if _, err := expand(context.Background(), fakeAgent{encode: func(string) string { return "a/b" }}, encoded, sd, "id"); err == nil {
		t.Error("{cwd_encoded} expanded to two path segments")
	}
}

// grpcSandbox serves a fakeSandbox through the SDK's gRPC transport, so its
// errors reach core as every plugin's do.
type grpcSandbox struct {
	sdk.SandboxProvider
	sb *fakeSandbox
}

func (grpcSandbox) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "fakesandbox", Sandbox: &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated}}, nil
}

func (p grpcSandbox) Create(context.Context, sdk.CreateRequest) (sdk.Sandbox, error) {
	return p.sb, nil
}

// TestMissingCompanionDirNotWarnedOverGRPC: a claude session without a
// companion directory (most iterations) is captured without a warning
// when the sandbox says "no such file or directory" in its own words, as
// the local and bubblewrap plugins do.
func TestMissingCompanionDirNotWarnedOverGRPC(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "5d1f0c2b-no-companion"
	write(t, filepath.Join(e.sb.home, ".claude", "projects", agentkit.EncodeClaudeCwd(e.sb.repo), id+".jsonl"), `{"cwd":"`+e.sb.repo+`"}`+"\n")
	sb, err := plugintest.Sandbox(t, grpcSandbox{sb: e.sb}).Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	tr := e.transfer(claudeStorage, id)
	tr.Sandbox = sb
	tr.Logger = hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Warn})
	if _, err := Capture(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if logged.Len() > 0 {
		t.Errorf("capture without a companion directory logged:\n%s", logged.String())
	}
}
