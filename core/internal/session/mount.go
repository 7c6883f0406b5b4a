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
	"strings"
	"syscall"

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
	parent, err := r.Lstat(path.Dir(rel))
	if err != nil {
		return err
	}
	st, ok := parent.Sys().(*syscall.Stat_t)
	if !parent.IsDir() || !ok {
		return errors.New("not a directory")
	}
	tmp := path.Join(path.Dir(rel), ".sanddune-"+path.Base(rel)+".tmp")
	err = r.WriteFile(tmp, data, 0o644)
	if err == nil && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		err = r.Lchown(tmp, int(st.Uid), int(st.Gid))
	}
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
	}
	return err
}
