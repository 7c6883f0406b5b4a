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

	"github.com/missingstudio/sanddune/sdk"
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
		// Area.CopyIn, so it cannot bring in a host file from elsewhere).
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
// replacing that name with dst: a file, a symlink, or a directory tree
// merged into an existing directory. Every entry is written through an
// os.Root on dst (its parent for the top entry), so no entry, and no
// symlink an earlier entry made, leads outside dst; an existing entry is
// replaced, never written through. Directory modes are applied last (a
// read-only directory does not stop what goes into it); hard links,
// devices and fifos are skipped.
func ExtractTar(r io.Reader, dst string) error {
	dst = filepath.Clean(dst)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	parent, err := os.OpenRoot(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer parent.Close()
	x := extraction{root: parent, name: filepath.Base(dst)}
	defer func() {
		if x.dst != nil {
			x.dst.Close()
		}
	}()
	tr := tar.NewReader(r)
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.finish()
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		first, rest, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top || first == ".." || first == "." {
			return fmt.Errorf("%w: archive entry %q is outside %s", sdk.ErrConfinement, h.Name, top)
		}
		if rest == "" {
			err = x.top(h, tr)
		} else {
			err = x.entry(h, filepath.FromSlash(rest), tr)
		}
		if err != nil {
			return confined(err)
		}
	}
}

// extraction is ExtractTar's state: root holds name (dst); dst is opened
// on it once the top entry made it a directory.
type extraction struct {
	root  *os.Root
	name  string
	dst   *os.Root
	dirs  []string // entries of dst (".": dst) whose modes are applied last
	modes []fs.FileMode
}

func (x *extraction) top(h *tar.Header, r io.Reader) error {
	if x.dst != nil {
		return fmt.Errorf("archive entry %q repeats the top entry", h.Name)
	}
	if err := write(x.root, x.name, h, r); err != nil || h.Typeflag != tar.TypeDir {
		return err
	}
	d, err := x.root.OpenRoot(x.name)
	if err != nil {
		return err
	}
	x.dst = d
	x.dirs, x.modes = append(x.dirs, "."), append(x.modes, fs.FileMode(h.Mode).Perm())
	return nil
}

func (x *extraction) entry(h *tar.Header, rel string, r io.Reader) error {
	if x.dst == nil {
		return fmt.Errorf("archive entry %q is not inside a directory entry", h.Name)
	}
	if err := x.dst.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	if err := write(x.dst, rel, h, r); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeDir {
		x.dirs, x.modes = append(x.dirs, rel), append(x.modes, fs.FileMode(h.Mode).Perm())
	}
	return nil
}

func (x *extraction) finish() error {
	for i := len(x.dirs) - 1; i >= 0; i-- {
		if err := x.dst.Chmod(x.dirs[i], x.modes[i]); err != nil {
			return err
		}
	}
	return nil
}

// write makes one entry at rel in root: an existing directory is merged
// into by a directory entry (and never replaced by anything else); any
// other existing entry is removed first.
func write(root *os.Root, rel string, h *tar.Header, r io.Reader) error {
	existing, err := root.Lstat(rel)
	if err != nil && !notExist(err) {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink:
	default:
		return nil // hard links, devices and fifos are not copied
	}
	if existing != nil && existing.IsDir() && h.Typeflag != tar.TypeDir {
		return fmt.Errorf("cannot replace directory %s with a file", rel)
	}
	if existing != nil && !existing.IsDir() {
		if err := root.Remove(rel); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if existing == nil || !existing.IsDir() {
			return root.Mkdir(rel, 0o700)
		}
		return root.Chmod(rel, existing.Mode().Perm()|0o700)
	case tar.TypeSymlink:
		return root.Symlink(h.Linkname, rel)
	}
	return createFile(root, rel, r, fs.FileMode(h.Mode).Perm())
}
