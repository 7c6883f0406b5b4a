package containerkit

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"
)

// DirsTar writes an archive of directories (absolute container paths,
// parents first) owned by uid:gid, for extraction at "/". Their parents
// outside dirs are written owned by root.
func DirsTar(w io.Writer, dirs []string, uid, gid int) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	seen := map[string]bool{}
	for _, d := range dirs {
		var parents []string
		for p := path.Dir(d); p != "/" && !seen[p]; p = path.Dir(p) {
			parents = append([]string{p}, parents...)
		}
		for _, p := range parents {
			seen[p] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: 0o755, ModTime: now}); err != nil {
				return err
			}
		}
		seen[d] = true
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
			Mode: 0o755, Uid: uid, Gid: gid, ModTime: now}); err != nil {
			return err
		}
	}
	return tw.Close()
}

// StatFunc reports whether a container path exists and is a directory.
type StatFunc func(ctx context.Context, p string) (exists, isDir bool, err error)

// CopyInTarget plans a copy of hostPath to the container path dst (already
// confined): the deepest existing directory above dst, where the archive
// is extracted, and the missing directories between them, which the
// archive creates (sandboxkit.WriteTar's dirs). It refuses the container
// root and a missing host path.
func CopyInTarget(ctx context.Context, hostPath, dst string, stat StatFunc) (parent string, missing []string, err error) {
	if dst == "/" {
		return "", nil, fmt.Errorf("refusing to write the container root")
	}
	if _, err := os.Lstat(hostPath); err != nil {
		return "", nil, err
	}
	for parent = path.Dir(dst); ; parent = path.Dir(parent) {
		exists, isDir, err := stat(ctx, parent)
		switch {
		case err != nil:
			return "", nil, fmt.Errorf("stat %s: %w", parent, err)
		case exists && !isDir:
			return "", nil, fmt.Errorf("%s is not a directory", parent)
		case exists:
			return parent, missing, nil
		}
		missing = append([]string{path.Base(parent)}, missing...)
	}
}
