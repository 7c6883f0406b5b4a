package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

func TestCopyPaths(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	commitFile(t, r.Root, ".gitignore", "node_modules/\n.env\n", "ignore")
	writeFile(t, filepath.Join(r.Root, ".env"), "SECRET=1\n")
	writeFile(t, filepath.Join(r.Root, "node_modules", "pkg", "index.js"), "module.exports = 1\n")
	writeFile(t, filepath.Join(r.Root, "node_modules", "pkg", "bin.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(r.Root, "node_modules", "pkg", "bin.sh"), 0o755)
	os.MkdirAll(filepath.Join(r.Root, "node_modules", ".bin"), 0o755)
	os.Symlink("../pkg/bin.sh", filepath.Join(r.Root, "node_modules", ".bin", "pkg"))
	os.Symlink("/etc/passwd", filepath.Join(r.Root, "node_modules", "abs-link"))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(filepath.Join(r.Root, ".env"), old, old)
	writeFile(t, filepath.Join(r.Root, "deep", "er", "cfg.json"), "{}")

	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "cp")
	defer closeWS(t, ws)
	skipped, err := CopyPaths(context.Background(), r.Root, ws.Dir, []string{".env", "node_modules", "deep/er/cfg.json", "missing", "./a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(skipped, ",") != "missing" {
		t.Fatalf("skipped %v", skipped)
	}
	if readFile(t, filepath.Join(ws.Dir, ".env")) != "SECRET=1\n" ||
		readFile(t, filepath.Join(ws.Dir, "node_modules", "pkg", "index.js")) != "module.exports = 1\n" ||
		readFile(t, filepath.Join(ws.Dir, "deep", "er", "cfg.json")) != "{}" {
		t.Fatal("content not copied")
	}
	if fi, _ := os.Stat(filepath.Join(ws.Dir, "node_modules", "pkg", "bin.sh")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(ws.Dir, ".env")); !fi.ModTime().Equal(old) {
		t.Fatalf("mtime %v", fi.ModTime())
	}
	for link, target := range map[string]string{".bin/pkg": "../pkg/bin.sh", "abs-link": "/etc/passwd"} {
		if got, err := os.Readlink(filepath.Join(ws.Dir, "node_modules", link)); err != nil || got != target {
			t.Fatalf("symlink %s -> %q %v", link, got, err)
		}
	}
	// Copies are independent files, not hard links.
	writeFile(t, filepath.Join(ws.Dir, ".env"), "changed")
	if readFile(t, filepath.Join(r.Root, ".env")) != "SECRET=1\n" {
		t.Fatal("copy shares storage with the source")
	}
	// Copying again over existing files works.
	if _, err := CopyPaths(context.Background(), r.Root, ws.Dir, []string{".env", "node_modules"}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(ws.Dir, ".env")) != "SECRET=1\n" {
		t.Fatal("not overwritten")
	}
}

func TestCopyPathsRejectsEscapes(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "s")
	os.Symlink(outside, filepath.Join(r.Root, "out"))
	dst := t.TempDir()
	os.Symlink(outside, filepath.Join(dst, "evil"))
	writeFile(t, filepath.Join(r.Root, "evil", "x"), "x")
	for _, rel := range []string{"../x", "/etc/passwd", ".git/config", ".git", "a/../../x", ".", "", "out/secret"} {
		if _, err := CopyPaths(context.Background(), r.Root, dst, []string{rel}); err == nil {
			t.Errorf("%q accepted", rel)
		}
	}
	// A symlink in the destination cannot redirect the copy outside.
	if _, err := CopyPaths(context.Background(), r.Root, dst, []string{"evil/x"}); err == nil {
		t.Error("copy through a destination symlink accepted")
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("file written outside the destination")
	}
	// A top-level symlink is copied as a link, not followed.
	if _, err := CopyPaths(context.Background(), r.Root, dst, []string{"out"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(filepath.Join(dst, "out")); got != outside {
		t.Fatalf("link %q", got)
	}
}

func TestCopySources(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	src, skipped, err := CopySources(r.Root, []string{"a.txt", "nope/x"})
	if err != nil || len(src) != 1 || src[0].Rel != "a.txt" || src[0].HostPath != filepath.Join(r.Root, "a.txt") ||
		strings.Join(skipped, ",") != "nope/x" {
		t.Fatalf("got %+v %v %v", src, skipped, err)
	}
}

func TestEnsureIgnoredDirKeepsHostClean(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	dir := r.StateDir("logs")
	if err := EnsureIgnoredDir(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "run.log"), "log")
	if err := EnsureIgnoredDir(dir); err != nil {
		t.Fatal(err)
	}
	hostClean(t, r.Root)
}

func TestCopyPathsHonoursCancellation(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	for i := 0; i < 200; i++ {
		writeFile(t, filepath.Join(r.Root, "many", fmt.Sprintf("f%03d", i)), "x")
	}
	dst := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CopyPaths(ctx, r.Root, dst, []string{"many"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled copy: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dst, "many")); len(left) != 0 {
		t.Errorf("a cancelled copy went on: %d files copied", len(left))
	}
}

func TestCopyIntoItselfRefused(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{".sanddune", ".sanddune/worktrees", ".sanddune/worktrees/x/y", "./.sanddune/"} {
		if _, err := CheckRelPath(rel); err == nil || !strings.Contains(err.Error(), "copy into itself") {
			t.Errorf("%s: %v", rel, err)
		}
	}
	for _, rel := range []string{".sanddune/.env", ".sanddune-x", "worktrees"} {
		if _, err := CheckRelPath(rel); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}
