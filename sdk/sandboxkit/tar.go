package sandboxkit

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
)

// WriteTar writes an archive of hostPath for extraction in a sandbox
// directory: entries for the directories dirs (each inside the previous
// one), then hostPath, renamed name, inside them. Symlinks are archived as
// symlinks, never followed; sockets, devices and fifos are left out.
// Entries are owned by uid:gid.
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
	if fi, err := os.Lstat(root); err == nil && !fi.IsDir() {
		// A file, or a symlink copied as a symlink (never followed, like
		// sandboxkit.Copy, so it cannot bring in a host file from elsewhere).
		if err := addTarEntry(tw, root, prefix+name, fi, uid, gid); err != nil {
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
		return addTarEntry(tw, p, entry, fi, uid, gid)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func addTarEntry(tw *tar.Writer, p, name string, fi fs.FileInfo, uid, gid int) error {
	h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Uid: uid, Gid: gid}
	switch {
	case fi.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
	case fi.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	default:
		return nil // sockets, devices, fifos are not copied
	}
	return WriteTarEntry(tw, h, p)
}

// WriteTarEntry writes h and, for a regular file, the content of the host
// file p.
func WriteTarEntry(tw *tar.Writer, h *tar.Header, p string) error {
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
// `tar -c name` and docker's archive API make them) to the host path dst,
// replacing that name with dst. Entries that would land outside dst or
// write through a symlink are rejected; hard links, devices and fifos are
// skipped.
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
		default:
			// Hard links, devices and fifos are not copied out.
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
