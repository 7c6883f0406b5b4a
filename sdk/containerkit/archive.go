package containerkit

import (
	"archive/tar"
	"io"
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
