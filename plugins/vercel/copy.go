package vercel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// maxCopyBytes caps one copy's archive (in memory on its way in; fs/write
// takes a whole body).
const maxCopyBytes = 1 << 30

// CopyIn copies a host file or directory to sandboxPath. A regular file is
// one fs/write; a directory or symlink goes as a tar.gz file that tar
// unpacks in the sandbox (fs/write takes regular files only), keeping
// modes, empty directories and symlinks.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.running.Done()
	dst, err := s.abs(sandboxPath)
	if err != nil {
		return err
	}
	if dst == "/" {
		return fmt.Errorf("vercel sandbox: cannot copy onto /")
	}
	fi, err := os.Lstat(hostPath)
	if err != nil {
		return fmt.Errorf("vercel sandbox: copy in: %w", err)
	}
	if fi.Mode().IsRegular() {
		if fi.Size() > maxCopyBytes {
			return fmt.Errorf("vercel sandbox: copy in: %s is larger than %d bytes", hostPath, maxCopyBytes)
		}
		data, err := os.ReadFile(hostPath)
		if err != nil {
			return fmt.Errorf("vercel sandbox: copy in: %w", err)
		}
		if err := s.cl.writeFiles(ctx, s.sid, file{path: dst, mode: int64(fi.Mode().Perm()), content: data}); err != nil {
			return s.fail(ctx, "copy in", err)
		}
		return nil
	}
	// A directory unpacks into dst; a symlink is one entry named like dst
	// unpacked into its parent.
	into, top := dst, "."
	if !fi.IsDir() {
		into, top = path.Dir(dst), path.Base(dst)
	}
	tgz, err := pack(ctx, hostPath, top)
	if err != nil {
		return fmt.Errorf("vercel sandbox: copy in: packing %s: %w", hostPath, err)
	}
	archive := "/tmp/sanddune-copy-" + randomHex() + ".tar.gz"
	if err := s.cl.writeFiles(ctx, s.sid, file{path: archive, mode: 0o600, content: tgz}); err != nil {
		return s.fail(ctx, "copy in", err)
	}
	return s.run(ctx, "unpacking the copy",
		`mkdir -p "$2" && tar -xzf "$1" -C "$2" --no-same-owner; rc=$?; rm -f "$1"; exit $rc`, archive, into)
}

// CopyOut copies a sandbox file or directory to hostPath (with
// Area.CopyOut's semantics there). A file is one fs/read; a directory
// is packed by tar in the sandbox and read as one file.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.running.Done()
	src, err := s.abs(sandboxPath)
	if err != nil {
		return err
	}
	archive := "/tmp/sanddune-copy-" + randomHex() + ".tar.gz"
	kind, err := s.output(ctx, "looking at "+src,
		`if [ -d "$1" ]; then tar -czf "$2" -C "$1" . && echo dir; elif [ -f "$1" ]; then echo file; stat -c %a "$1"; else echo missing; fi`,
		src, archive)
	if err != nil {
		return err
	}
	fields := strings.Fields(kind)
	if len(fields) == 0 || fields[0] == "missing" {
		return fmt.Errorf("vercel sandbox: copy out: %s: no such file or directory in the sandbox", src)
	}
	tmp, err := os.MkdirTemp("", "sanddune-vercel-copy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	local := filepath.Join(tmp, "out")
	if fields[0] == "dir" {
		defer func() { _ = s.run(context.WithoutCancel(ctx), "removing the copy archive", `rm -f "$1"`, archive) }()
		if err := s.fetch(ctx, archive, func(r io.Reader) error { return unpack(r, local) }); err != nil {
			return err
		}
	} else {
		mode := fs.FileMode(0o644)
		if len(fields) > 1 {
			if m, err := strconv.ParseUint(fields[1], 8, 32); err == nil {
				mode = fs.FileMode(m).Perm()
			}
		}
		if err := s.fetch(ctx, src, func(r io.Reader) error { return writeFile(local, r, mode) }); err != nil {
			return err
		}
	}
	if err := (sandboxkit.Area{tmp}).CopyOut(ctx, local, hostPath); err != nil {
		return fmt.Errorf("vercel sandbox: copy out: %w", err)
	}
	return nil
}

// fetch reads a sandbox file with fs/read into use.
func (s *sandbox) fetch(ctx context.Context, p string, use func(io.Reader) error) error {
	rc, err := s.cl.readFile(ctx, s.sid, p)
	if isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("vercel sandbox: copy out: %s: no such file in the sandbox", p)
	}
	if err != nil {
		return s.fail(ctx, "copy out", err)
	}
	defer rc.Close()
	if err := use(io.LimitReader(rc, maxCopyBytes)); err != nil {
		return fmt.Errorf("vercel sandbox: copy out %s: %w", p, err)
	}
	return nil
}

// run runs a script of ours (`sh -c script sh args...`) and fails unless
// it exits 0.
func (s *sandbox) run(ctx context.Context, what, script string, args ...string) error {
	_, err := s.output(ctx, what, script, args...)
	return err
}

// output runs a script of ours and returns its stdout; a non-zero exit is
// an error with its stderr.
func (s *sandbox) output(ctx context.Context, what, script string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	res, err := s.Exec(ctx, sdk.ExecRequest{Argv: append([]string{"sh", "-c", script, "sh"}, args...), Cwd: s.cwd},
		func(l sdk.OutputLine) {
			b := &stdout
			if l.Stream == sdk.Stderr {
				b = &stderr
			}
			b.Write(l.Text)
			if !l.Partial {
				b.WriteByte('\n')
			}
		})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("vercel sandbox %s: %s: exit code %d: %s", s.name, what, res.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// pack makes a tar.gz of the host file tree at src, its top entry named
// top. Symlinks are stored as symlinks, never followed; sockets, devices
// and pipes are skipped.
func pack(ctx context.Context, src, top string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(top, filepath.ToSlash(rel))
		link := ""
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !fi.Mode().IsRegular() && !fi.IsDir():
			return nil
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = name
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		if buf.Len() > maxCopyBytes {
			return fmt.Errorf("larger than %d bytes", maxCopyBytes)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpack extracts a tar.gz made by tar -C dir . into the new directory
// dst, confined to it: directories, regular files and symlinks (made, not
// followed).
func unpack(r io.Reader, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	// Directory modes are applied last: a read-only one must not stop
	// what goes into it.
	var dirs []string
	var modes []fs.FileMode
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := root.Chmod(dirs[i], modes[i]); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			if h.Typeflag == tar.TypeDir {
				dirs, modes = append(dirs, "."), append(modes, fs.FileMode(h.Mode).Perm())
			}
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
			dirs, modes = append(dirs, name), append(modes, mode)
		case tar.TypeReg:
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
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
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		}
	}
}

// writeFile writes r to a new file p with mode.
func writeFile(p string, r io.Reader, mode fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(p, mode)
	}
	return err
}
