package docker

import (
	"archive/tar"
	"io"
	"io/fs"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
)

func statUID(fi fs.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }

// partial counts the pieces of long lines that are not their last.
func partial(o *kittest.Output) int {
	n := 0
	for _, p := range o.Pieces {
		if p.Partial {
			n++
		}
	}
	return n
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

func writeTestTarLink(t *testing.T, w io.Writer) {
	tw := tar.NewWriter(w)
	_ = tw.WriteHeader(&tar.Header{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "/tmp"})
	_ = tw.WriteHeader(&tar.Header{Name: "a/l/evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
}
