package sandboxkit

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

// entry is one archive entry for tarOf: a regular file unless link or dir.
type entry struct {
	name, body, link string
	dir              bool
	mode             int64
}

func tarOf(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.body))}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if e.mode != 0 {
			h.Mode = e.mode
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// TestExtractTarStaysInDestination: entries naming a path outside the
// destination, and entries written through a symlink the archive made
// (to an absolute path, or to .. from inside), are refused and nothing
// lands outside.
func TestExtractTarStaysInDestination(t *testing.T) {
	t.Parallel()
	for name, archive := range map[string][]entry{
		"dot-dot":             {{name: "a", dir: true}, {name: "a/../../evil", body: "x"}},
		"second top":          {{name: "a", dir: true}, {name: "b/evil", body: "x"}},
		"leading dot-dot":     {{name: "../evil", body: "x"}},
		"absolute symlink":    {{name: "a/", dir: true}, {name: "a/l", link: "/tmp"}, {name: "a/l/evil", body: "x"}},
		"symlink to parent":   {{name: "a/", dir: true}, {name: "a/up", link: ".."}, {name: "a/up/evil", body: "x"}},
		"entry under a file":  {{name: "a", body: "x"}, {name: "a/evil", body: "x"}},
		"symlink up two dirs": {{name: "a/", dir: true}, {name: "a/d/", dir: true}, {name: "a/d/up", link: "../.."}, {name: "a/d/up/evil", body: "x"}},
	} {
		t.Run(name, func(t *testing.T) {
			outside := t.TempDir()
			dst := filepath.Join(outside, "dst")
			err := ExtractTar(tarOf(t, archive...), dst)
			if err == nil {
				t.Fatal("extracted")
			}
			if _, serr := os.Lstat(filepath.Join(outside, "evil")); serr == nil {
				t.Fatalf("evil landed outside the destination (%v)", err)
			}
		})
	}
}

// TestExtractTarReplacesTheTopEntry: the archive's top name becomes dst; a
// tree merges into an existing directory, keeps modes (a read-only
// directory included) and symlinks, and replaces a symlink at a file's
// place instead of writing through it.
func TestExtractTarReplacesTheTopEntry(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	dst := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "kept"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "target")
	if err := os.WriteFile(target, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dst, "f")); err != nil {
		t.Fatal(err)
	}
	err := ExtractTar(tarOf(t,
		entry{name: "repo/", dir: true},
		entry{name: "repo/f", body: "new", mode: 0o755},
		entry{name: "repo/ro/", dir: true, mode: 0o555},
		entry{name: "repo/ro/g", body: "g"},
		entry{name: "repo/l", link: "f"},
	), dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "ro"), 0o755) })
	if b, _ := os.ReadFile(target); string(b) != "outside" {
		t.Errorf("wrote through the symlink at f: target holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "f")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Errorf("f: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "ro")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("ro: %v %v", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "ro", "g")); err != nil || string(b) != "g" {
		t.Errorf("ro/g: %q %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "l")); err != nil || l != "f" {
		t.Errorf("l: %q %v", l, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "kept")); err != nil {
		t.Errorf("an existing file was lost: %v", err)
	}
	file := filepath.Join(t.TempDir(), "sub", "one")
	if err := ExtractTar(tarOf(t, entry{name: "x.txt", body: "one"}), file); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "one" {
		t.Errorf("single file: %q %v", b, err)
	}
	if err := ExtractTar(tarOf(t, entry{name: "x.txt", body: "one"}), dst); err == nil {
		t.Error("a file replaced a directory")
	}
	if !errors.Is(ExtractTar(tarOf(t, entry{name: "../x", body: "x"}), file), sdk.ErrConfinement) {
		t.Error("an escaping entry is not an sdk.ErrConfinement")
	}
}
