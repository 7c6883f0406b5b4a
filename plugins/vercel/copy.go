package vercel

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
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
	// One top entry named like dst (a directory merges into an existing
	// one), unpacked into dst's parent.
	tgz, err := pack(ctx, hostPath, path.Base(dst))
	if err != nil {
		return fmt.Errorf("vercel sandbox: copy in: packing %s: %w", hostPath, err)
	}
	archive := "/tmp/sanddune-copy-" + randomHex() + ".tar.gz"
	if err := s.cl.writeFiles(ctx, s.sid, file{path: archive, mode: 0o600, content: tgz}); err != nil {
		return s.fail(ctx, "copy in", err)
	}
	return s.run(ctx, "unpacking the copy",
		`mkdir -p "$2" && tar -xzf "$1" -C "$2" --no-same-owner; rc=$?; rm -f "$1"; exit $rc`, archive, path.Dir(dst))
}

// CopyOut copies a sandbox file or directory (a symlink at sandboxPath is
// followed) to hostPath, the destination itself: tar packs it in the
// sandbox, fs/read fetches the archive, and sandboxkit.ExtractTar writes
// it, confined to hostPath.
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
	packed, err := s.output(ctx, "packing "+src,
		`p=$(readlink -f -- "$1") && [ -e "$p" ] || { echo missing; exit 0; }
tar -czf "$2" -C "$(dirname -- "$p")" -- "$(basename -- "$p")" && echo packed`,
		src, archive)
	if err != nil {
		return err
	}
	if strings.TrimSpace(packed) != "packed" {
		return fmt.Errorf("vercel sandbox: copy out %s: %w", src, sdk.ErrNotFound)
	}
	defer func() { _ = s.run(context.WithoutCancel(ctx), "removing the copy archive", `rm -f "$1"`, archive) }()
	return s.fetch(ctx, archive, func(r io.Reader) error {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		return sandboxkit.ExtractTar(zr, hostPath)
	})
}

// fetch reads a sandbox file with fs/read into use.
func (s *sandbox) fetch(ctx context.Context, p string, use func(io.Reader) error) error {
	rc, err := s.cl.readFile(ctx, s.sid, p)
	if isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("vercel sandbox: copy out %s: %w", p, sdk.ErrNotFound)
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

// pack makes a tar.gz of the host file tree at src (sandboxkit.WriteTar),
// its top entry named top, owned by root.
func pack(ctx context.Context, src, top string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(capped{ctx: ctx, buf: &buf})
	if err := sandboxkit.WriteTar(zw, src, nil, top, 0, 0); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// capped is a buffer that stops at maxCopyBytes or when ctx ends.
type capped struct {
	ctx context.Context
	buf *bytes.Buffer
}

func (w capped) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if w.buf.Len()+len(p) > maxCopyBytes {
		return 0, fmt.Errorf("larger than %d bytes", maxCopyBytes)
	}
	return w.buf.Write(p)
}
