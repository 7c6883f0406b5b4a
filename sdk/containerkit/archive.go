package containerkit

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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

// WriteTar writes, for extraction into an existing directory, the
// directories dirs (nested: a/b/...) and then hostPath under the name
// dirs/name, everything owned by uid:gid. A symlink is archived as a
// symlink, never followed; sockets, devices and fifos are left out.
func WriteTar(w io.Writer, hostPath string, dirs []string, name string, uid, gid int) error {
	tw := tar.NewWriter(w)
	prefix := ""
	for _, d := range dirs {
		prefix += d + "/"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix, Mode: 0o755, Uid: uid, Gid: gid}); err != nil {
			return err
		}
	}
	root := filepath.Clean(hostPath)
	add := func(p, entry string, fi fs.FileInfo) error {
		h := &tar.Header{Name: entry, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Uid: uid, Gid: gid}
		switch {
		case fi.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, entry+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
		case fi.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		default:
			return nil
		}
		return WriteEntry(tw, h, p)
	}
	if fi, err := os.Lstat(root); err != nil {
		return err
	} else if !fi.IsDir() {
		if err := add(root, prefix+name, fi); err != nil {
			return err
		}
		return tw.Close()
	}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		entry := prefix + name
		if rel != "." {
			entry += "/" + filepath.ToSlash(rel)
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		return add(p, entry, fi)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// WriteEntry writes h and, for a regular file, the content of p.
func WriteEntry(tw *tar.Writer, h *tar.Header, p string) error {
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyN(tw, f, h.Size)
	return err
}

// ExtractTar writes an archive whose entries share one top-level name (as
// engines return a copied-out path) to dst, replacing that name with dst.
// Entries that would land outside dst or write through a symlink are
// rejected; hard links, devices and fifos are skipped.
func ExtractTar(r io.Reader, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		first, rest, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("archive entry %q escapes the destination", h.Name)
		}
		target := dst
		if rest != "" {
			target = filepath.Join(dst, filepath.FromSlash(rest))
			if !strings.HasPrefix(target, dst+string(filepath.Separator)) {
				return fmt.Errorf("archive entry %q escapes the destination", h.Name)
			}
			if err := noSymlinkBetween(dst, filepath.Dir(target)); err != nil {
				return err
			}
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if fi, err := os.Lstat(target); err == nil && !fi.Mode().IsRegular() {
				if err := os.Remove(target); err != nil {
					return err
				}
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			_ = os.Chmod(target, mode)
		case tar.TypeSymlink:
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		}
	}
}

// noSymlinkBetween fails when any path component from root (exclusive) to
// dir (inclusive) is a symlink, so extraction never writes through one.
func noSymlinkBetween(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return err
	}
	p := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("archive writes through symlink %s", p)
		}
	}
	return nil
}
