package pluginhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-version"
)

// trustEnv is a repository and a user data dir for a host, each in its
// own temp dir.
type trustEnv struct {
	repo, data, pluginPath string
}

func newTrustEnv(t *testing.T) trustEnv {
	return trustEnv{repo: t.TempDir(), data: t.TempDir(), pluginPath: t.TempDir()}
}

func (e trustEnv) host(t *testing.T, builtins ...string) *Host {
	t.Helper()
	h := New(Options{
		Builtins:   ownBinaries(builtins...),
		Executable: installed(t, ownBinaries(builtins...)),
		RepoRoot:   e.repo,
		Getenv: func(k string) string {
			switch k {
			case "XDG_DATA_HOME":
				return e.data
			case "SANDDUNE_PLUGIN_PATH":
				return e.pluginPath
			}
			return ""
		},
		Logger: hclog.NewNullLogger(),
	})
	t.Cleanup(h.Close)
	return h
}

// copyFile copies a binary (a copy, not a symlink, so that tampering
// with it leaves the original alone).
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func appendByte(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
}

// TestRepoBinaryRunsNothingUntilTrusted: a binary that comes with the
// repository is not executed, by Resolve or by List, until the user trusts
// it; LockRepo trusts and pins it.
func TestRepoBinaryRunsNothingUntilTrusted(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\ntouch " + marker + "\n"
	if err := os.MkdirAll(filepath.Join(e.repo, ".sanddune/plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.repo, ".sanddune/plugins", BinaryPrefix+"evil"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// A lock file committed with it trusts nothing.
	sum, _ := FileSHA256(filepath.Join(e.repo, ".sanddune/plugins", BinaryPrefix+"evil"))
	lock := &Lock{Path: filepath.Join(e.repo, RepoLockFile), Entries: map[string]LockEntry{"evil": {Name: "evil", Source: "x", SHA256: sum}}}
	if err := lock.Write(); err != nil {
		t.Fatal(err)
	}
	h := e.host(t)
	_, _, err := h.Sandbox(context.Background(), "evil")
	var ue *UntrustedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "sanddune plugins lock") || !strings.Contains(err.Error(), sum) {
		t.Fatalf("err = %v, want an UntrustedError naming the checksum and `sanddune plugins lock`", err)
	}
	rows := h.List(context.Background())
	var listed bool
	for _, r := range rows {
		listed = listed || (r.Source.Name == "evil" && errors.As(r.Err, &ue))
	}
	if !listed {
		t.Fatalf("List does not show the untrusted binary as untrusted: %+v", rows)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's plugin binary was executed before it was trusted")
	}
}

func TestLockRepoTrustsAndPinsThenRefusesTamperedBinary(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	bin := filepath.Join(e.repo, ".sanddune/plugins", BinaryPrefix+"beta")
	copyFile(t, fakePlugin, bin, 0o755)
	h := e.host(t)
	entries, err := h.LockRepo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	sum, _ := FileSHA256(bin)
	if len(entries) != 1 || entries[0].Name != "beta" || entries[0].SHA256 != sum || entries[0].Version != "9.9.9-fake" ||
		entries[0].Source != filepath.Join(".sanddune", "plugins", BinaryPrefix+"beta") {
		t.Fatalf("lock entries %+v", entries)
	}
	lock, err := ReadLock(filepath.Join(e.repo, RepoLockFile))
	if err != nil || lock.Entries["beta"] != entries[0] {
		t.Fatalf("lock file holds %+v (%v), want %+v", lock, err, entries[0])
	}
	// Trusted and locked: a fresh host (a new sanddune) starts it.
	h = e.host(t)
	if _, _, err := h.Sandbox(context.Background(), "beta"); err != nil {
		t.Fatal(err)
	}
	h.Close()
	appendByte(t, bin)
	tampered, _ := FileSHA256(bin)
	_, _, err = e.host(t).Sandbox(context.Background(), "beta")
	var ce *ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ChecksumError", err)
	}
	for _, want := range []string{sum, tampered, filepath.Join(e.repo, RepoLockFile), "sanddune plugins lock", bin} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestTrustedRepoBinaryIsPinnedOnFirstUse: a repository's binary the user
// trusted (the same bytes, locked in another clone) but no lock file names
// is pinned in the repository's lock file when it first starts; entries
// already there stay, an untrusted binary is neither started nor pinned,
// and the pin then refuses a tampered binary.
func TestTrustedRepoBinaryIsPinnedOnFirstUse(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	bin := filepath.Join(e.repo, ".sanddune/plugins", BinaryPrefix+"beta")
	copyFile(t, fakePlugin, bin, 0o755)
	untrusted := filepath.Join(e.repo, ".sanddune/plugins", BinaryPrefix+"gamma")
	copyFile(t, fakePlugin, untrusted, 0o755)
	appendByte(t, untrusted)
	sum, _ := FileSHA256(bin)
	if err := (TrustStore{Path: filepath.Join(e.data, "sanddune", "trusted-plugins")}).Trust(sum, "/elsewhere/"+BinaryPrefix+"beta"); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(e.repo, RepoLockFile)
	other := LockEntry{Name: "other", Source: "bin/other", SHA256: strings.Repeat("ab", 32)}
	if err := (&Lock{Path: lockPath, Entries: map[string]LockEntry{"other": other}}).Write(); err != nil {
		t.Fatal(err)
	}

	h := e.host(t)
	if _, _, err := h.Sandbox(context.Background(), "beta"); err != nil {
		t.Fatal(err)
	}
	var ue *UntrustedError
	if _, _, err := h.Sandbox(context.Background(), "gamma"); !errors.As(err, &ue) {
		t.Fatalf("untrusted binary: err = %v, want an UntrustedError", err)
	}
	want := LockEntry{Name: "beta", Source: filepath.Join(".sanddune", "plugins", BinaryPrefix+"beta"), Version: "9.9.9-fake", SHA256: sum}
	lock, err := ReadLock(lockPath)
	if err != nil || len(lock.Entries) != 2 || lock.Entries["beta"] != want || lock.Entries["other"] != other {
		t.Fatalf("lock file holds %+v (%v), want %+v and %+v", lock.Entries, err, want, other)
	}
	for _, r := range h.List(context.Background()) {
		if r.Source.Name == "beta" && (r.Lock != lockPath || r.Mismatch) {
			t.Errorf("List after the first use: %+v, want it locked in %s", r, lockPath)
		}
	}
	h.Close()

	appendByte(t, bin)
	var ce *ChecksumError
	if _, _, err := e.host(t).Sandbox(context.Background(), "beta"); !errors.As(err, &ce) || ce.Locked != sum {
		t.Fatalf("tampered after the first use: err = %v, want a ChecksumError pinning %s", err, sum)
	}
}

// TestSecureConfigRefusesTamperedTrustedBinary: a binary the user put on
// SANDDUNE_PLUGIN_PATH needs no trust, but a lock entry still pins it:
// go-plugin's SecureConfig refuses it and the error names both checksums.
func TestSecureConfigRefusesTamperedTrustedBinary(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	bin := filepath.Join(e.pluginPath, BinaryPrefix+"gamma")
	copyFile(t, fakePlugin, bin, 0o755)
	h := e.host(t)
	if _, err := h.LockRepo(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if _, err := os.Stat(filepath.Join(e.data, "sanddune", "trusted-plugins")); err == nil {
		t.Error("LockRepo recorded a binary of SANDDUNE_PLUGIN_PATH as trusted; only the repository's need it")
	}
	locked, _ := FileSHA256(bin)
	appendByte(t, bin)
	tampered, _ := FileSHA256(bin)
	_, _, err := e.host(t).Sandbox(context.Background(), "gamma")
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Locked != locked || ce.Actual != tampered || !strings.Contains(err.Error(), locked) || !strings.Contains(err.Error(), tampered) {
		t.Fatalf("err = %v, want a ChecksumError naming %s and %s", err, locked, tampered)
	}
}

func TestInstallCopiesAndPins(t *testing.T) {
	t.Parallel()
	e := newTrustEnv(t)
	e.pluginPath = ""
	src := filepath.Join(t.TempDir(), BinaryPrefix+"delta")
	copyFile(t, fakePlugin, src, 0o755)
	entry, err := e.host(t).Install(context.Background(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(e.data, "sanddune", "plugins", BinaryPrefix+"delta")
	sum, _ := FileSHA256(src)
	if entry.Source != dst || entry.SHA256 != sum || entry.Version != "9.9.9-fake" {
		t.Fatalf("entry %+v", entry)
	}
	rows := e.host(t).List(context.Background())
	var ok bool
	for _, r := range rows {
		ok = ok || (r.Info.Name == "delta" && r.Source.Path == dst && r.Lock == filepath.Join(e.data, "sanddune", "plugins.lock.hcl") && !r.Mismatch)
	}
	if !ok {
		t.Fatalf("List does not show the installed, locked plugin: %+v", rows)
	}
	if _, err := e.host(t, "local").Install(context.Background(), src, "local"); err == nil || !strings.Contains(err.Error(), "required_plugins") {
		t.Fatalf("installing under a built-in's name: err = %v", err)
	}
	notPlugin := filepath.Join(t.TempDir(), BinaryPrefix+"sh")
	copyFile(t, "/bin/true", notPlugin, 0o755)
	if _, err := e.host(t).Install(context.Background(), notPlugin, ""); err == nil {
		t.Fatal("installing a binary that is no plugin succeeded")
	}
	if _, err := os.Stat(filepath.Join(e.data, "sanddune", "plugins", BinaryPrefix+"sh")); err == nil {
		t.Fatal("a binary that is no plugin was installed")
	}
}

// TestStartupCrashShowsStderr: a plugin that dies before the handshake
// (here a Python-like traceback) is reported with its last stderr lines
// instead of go-plugin's "Unrecognized remote plugin message".
func TestStartupCrashShowsStderr(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho '  File \"plugin.py\", line 3' >&2\necho \"ModuleNotFoundError: No module named 'grpc'\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, BinaryPrefix+"py"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, logs := newHost(t, dir)
	h.opts.Logger.SetLevel(hclog.Warn)
	_, _, err := h.Sandbox(context.Background(), "py")
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a StartError", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "Unrecognized remote plugin message") || !strings.Contains(msg, "No module named 'grpc'") || !strings.Contains(msg, "Traceback") {
		t.Fatalf("error does not show the plugin's stderr:\n%s", msg)
	}
	if !strings.Contains(logs.String(), "[WARN]  plugin.py: ModuleNotFoundError") {
		t.Fatalf("non-JSON stderr is not logged at warn:\n%s", logs)
	}
}

func TestRequiredVersionIsChecked(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginDir(t, "beta"))
	c, _ := version.NewConstraint(">= 10.0")
	h.opts.Required = map[string]Requirement{"beta": {Version: c, Decl: "sanddune.hcl:2"}}
	_, _, err := h.Sandbox(context.Background(), "beta")
	if err == nil || !strings.Contains(err.Error(), "9.9.9-fake") || !strings.Contains(err.Error(), ">= 10.0") || !strings.Contains(err.Error(), "sanddune.hcl:2") {
		t.Fatalf("err = %v, want the version, the constraint and where it is declared", err)
	}
	c, _ = version.NewConstraint("= 9.9.9-fake")
	h2, _ := newHost(t, pluginDir(t, "beta"))
	h2.opts.Required = map[string]Requirement{"beta": {Version: c}}
	if _, _, err := h2.Sandbox(context.Background(), "beta"); err != nil {
		t.Fatal(err)
	}
}

func TestLockFileRejectsBadChecksum(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plugins.lock.hcl")
	if err := os.WriteFile(path, []byte("plugin \"x\" {\n  source = \"a\"\n  sha256 = \"zz\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLock(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want an error naming the file", err)
	}
}
