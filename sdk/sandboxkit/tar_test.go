package sandboxkit

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestExtractTarRejectsTraversal(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{{"a", "a/../../evil"}, {"a", "b/evil"}, {"../evil"}} {
		var buf bytes.Buffer
		writeTestTar(t, &buf, names)
		dst := filepath.Join(t.TempDir(), "dst")
		if err := ExtractTar(&buf, dst); err == nil {
			t.Errorf("%q extracted", names)
		}
	}
	// A symlink in the archive is never written through.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "/tmp"})
	_ = tw.WriteHeader(&tar.Header{Name: "a/l/evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	if err := ExtractTar(&buf, filepath.Join(t.TempDir(), "dst")); err == nil {
		t.Error("write through symlink accepted")
	}
}

// WriteTar's archive extracts back to the same tree, symlinks as symlinks.
func TestWriteTarRoundTrip(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "f"), []byte("data"), 0o600))
	must(t, os.Symlink("d/f", filepath.Join(src, "l")))
	var buf bytes.Buffer
	must(t, WriteTar(&buf, src, []string{"p"}, "tree", 1000, 1000))
	// Entries are p/, p/tree/...: extract the subtree under p.
	tr := tar.NewReader(&buf)
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		if h.Uid != 1000 {
			t.Fatalf("%s owned by %d", h.Name, h.Uid)
		}
		if h.Name == "p/" {
			continue
		}
		h.Name = h.Name[len("p/"):]
		must(t, tw.WriteHeader(h))
		_, _ = io.Copy(tw, tr)
	}
	must(t, tw.Close())
	dst := filepath.Join(t.TempDir(), "copy")
	must(t, ExtractTar(&out, dst))
	if b, err := os.ReadFile(filepath.Join(dst, "d", "f")); err != nil || string(b) != "data" {
		t.Fatalf("file: %q %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "l")); err != nil || l != "d/f" {
		t.Fatalf("symlink: %q %v", l, err)
	}
}

func writeTestTar(t *testing.T, w io.Writer, names []string) {
	tw := tar.NewWriter(w)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte("x"))
	}
	_ = tw.Close()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
