package docker

import (
	"archive/tar"
	"io"
	"io/fs"
	"syscall"
	"testing"
)

func statUID(fi fs.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }

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
