package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// MountDir is the sandbox directory to mount a host directory at, so
// that a sandbox's sessions are files on the host: the static part of the
// storage pattern below {home}, up to the first path element holding a
// placeholder or a glob ("~/.claude/projects" for
// "{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl"). ok is false
// when the pattern has no such part.
func MountDir(s sdk.SessionStorage) (dir string, ok bool) {
	rest, ok := strings.CutPrefix(s.PathPattern, "{home}/")
	if !ok {
		return "", false
	}
	elems := strings.Split(rest, "/")
	var static []string
	for _, e := range elems[:len(elems)-1] { // the last one is the file
		if e == "" || e == "." || e == ".." || strings.ContainsAny(e, "{*") {
			break
		}
		static = append(static, e)
	}
	if len(static) == 0 {
		return "", false
	}
	return "~/" + strings.Join(static, "/"), true
}

// mounted is a sandbox whose copies of paths inside its mounts (host
// directories bind-mounted in it) are file copies on the host, with no
// request to the sandbox. Every host access goes through an os.Root of
// the mount: a symlink the sandbox made there cannot lead outside it.
type mounted struct {
	sdk.Sandbox
	mounts []sdk.Mount
}

// local returns the mount holding sandbox path p and p relative to it.
func (m mounted) local(p string) (root, rel string, ok bool) {
	p = path.Clean(p)
	for _, mt := range m.mounts {
		if sandboxkit.Within(p, mt.SandboxPath) && !mt.ReadOnly {
			rel := strings.TrimPrefix(strings.TrimPrefix(p, mt.SandboxPath), "/")
			if rel == "" {
				rel = "."
			}
			return mt.HostPath, rel, true
		}
	}
	return "", "", false
}

// CopyOut copies a file or directory inside a mount to hostPath (regular
// files and directories only); a missing one is sdk.ErrNotFound.
func (m mounted) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	dir, rel, ok := m.local(sandboxPath)
	if !ok {
		return m.Sandbox.CopyOut(ctx, sandboxPath, hostPath)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	defer r.Close()
	if _, err := r.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copy out %s: %w", sandboxPath, sdk.ErrNotFound)
	}
	err = fs.WalkDir(r.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		sub, _ := filepath.Rel(rel, p)
		dst := filepath.Join(hostPath, sub)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o700)
		case d.Type().IsRegular():
			return copyFromRoot(r, p, dst)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	return nil
}

func copyFromRoot(r *os.Root, src, dst string) error {
	in, err := r.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// list lists, newest first, the regular files below sandbox directory
// root when it is inside a mount (ok false otherwise; none when it is
// missing), as sandbox paths.
func (m mounted) list(root string) (files []string, ok bool, err error) {
	dir, rel, ok := m.local(root)
	if !ok {
		return nil, false, nil
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, true, err
	}
	defer r.Close()
	mtimes := map[string]time.Time{}
	err = fs.WalkDir(r.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sub, _ := filepath.Rel(rel, p)
		f := path.Join(path.Clean(root), filepath.ToSlash(sub))
		files, mtimes[f] = append(files, f), fi.ModTime()
		return nil
	})
	slices.SortStableFunc(files, func(a, b string) int { return mtimes[b].Compare(mtimes[a]) })
	return files, true, err
}

// CopyIn writes a host file into a mount, in an existing directory, owned
// like that directory (the sandbox's user may go on writing it); anything
// else is copied through the sandbox.
func (m mounted) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	dir, rel, ok := m.local(sandboxPath)
	if !ok || rel == "." || m.writeIn(dir, hostPath, rel) != nil {
		return m.Sandbox.CopyIn(ctx, hostPath, sandboxPath)
	}
	return nil
}

// writeIn writes file src at rel under the mount dir, via a temporary
// file renamed into place.
func (m mounted) writeIn(dir, src, rel string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	uid, gid, err := owner(r, path.Dir(rel))
	if err != nil {
		return err
	}
	tmp := path.Join(path.Dir(rel), ".sanddune-"+path.Base(rel)+".tmp")
	err = r.WriteFile(tmp, data, 0o644)
	if err == nil {
		err = chown(r, tmp, uid, gid)
	}
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
	}
	return err
}

// mkdirs makes sandbox directories inside the mounts, each new one owned
// like its mount, or fails, having made none, when one is outside them
// or this process cannot give a directory to that owner: the caller then
// asks the sandbox.
func (m mounted) mkdirs(dirs []string) error {
	type local struct{ dir, rel string }
	var ls []local
	for _, d := range dirs {
		dir, rel, ok := m.local(d)
		if !ok {
			return fmt.Errorf("%s is not mounted", d)
		}
		ls = append(ls, local{dir, rel})
	}
	for _, l := range ls {
		if err := mkdirOwned(l.dir, l.rel); err != nil {
			return err
		}
	}
	return nil
}

func mkdirOwned(dir, rel string) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	uid, gid, err := owner(r, ".")
	if err != nil {
		return err
	}
	if err := chown(r, ".", uid, gid); err != nil { // nothing made yet
		return err
	}
	cur := "."
	for _, e := range strings.Split(rel, "/") {
		if cur = path.Join(cur, e); cur == "." {
			continue
		}
		if err := r.Mkdir(cur, 0o755); errors.Is(err, fs.ErrExist) {
			continue
		} else if err != nil {
			return err
		}
		if err := chown(r, cur, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// owner is the owner of directory rel under r.
func owner(r *os.Root, rel string) (uid, gid int, err error) {
	fi, err := r.Lstat(rel)
	if err != nil {
		return 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return 0, 0, fmt.Errorf("%s is not a directory", rel)
	}
	return int(st.Uid), int(st.Gid), nil
}

// chown gives rel under r, which this process made, to uid:gid: as root;
// otherwise uid must be this process's own.
func chown(r *os.Root, rel string, uid, gid int) error {
	switch euid := os.Geteuid(); {
	case euid == 0 && (uid != 0 || gid != os.Getegid()):
		return r.Lchown(rel, uid, gid)
	case euid != 0 && euid != uid:
		return fmt.Errorf("cannot give %s to uid %d", rel, uid)
	}
	return nil
}
