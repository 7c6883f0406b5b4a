package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	utilexec "k8s.io/client-go/util/exec"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// copyInScript extracts the tar stream on stdin into the directory $1
// (created when missing) after checking that it resolves inside the roots
// (see insideRoots); a symlink at the target name $2 is removed first, so
// the copy never writes through it.
const copyInScript = `dir=$1 name=$2; shift 2
a=$dir
while [ ! -e "$a" ]; do a=${a%/*}; [ -n "$a" ] || a=/; done
cd -- "$a" || exit 1
` + insideRoots + `
[ -n "$ok" ] || { echo "sanddune: $dir is outside the sandbox" >&2; exit 1; }
mkdir -p -- "$dir" && cd -- "$dir" || exit 1
[ -L "$name" ] && { rm -f -- "$name" || exit 1; }
exec tar -xf -`

// copyOutScript writes a tar stream of $1 (a file, directory or symlink,
// never followed) to stdout after checking that its directory resolves
// inside the roots. Exit 2 means it does not exist.
const copyOutScript = `src=$1; shift
dir=${src%/*}; [ -n "$dir" ] || dir=/
name=${src##*/}
cd -- "$dir" 2>/dev/null || { echo "sanddune: $src: no such file or directory" >&2; exit 2; }
` + insideRoots + `
[ -n "$ok" ] || { echo "sanddune: $src is outside the sandbox" >&2; exit 1; }
[ -e "$name" ] || [ -L "$name" ] || { echo "sanddune: $src: no such file or directory" >&2; exit 2; }
exec tar -cf - -- "$name"`

// CopyIn copies a host file or directory to sandboxPath as a tar stream
// over exec. Missing parent directories are created.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	dst, err := s.confine(sandboxPath)
	if err != nil {
		return fmt.Errorf("kubernetes sandbox: copy in: %w", err)
	}
	if s.isRoot(dst) {
		return fmt.Errorf("kubernetes sandbox: copy in: refusing to replace %s itself", dst)
	}
	if _, err := os.Lstat(hostPath); err != nil {
		return fmt.Errorf("kubernetes sandbox: copy in: %w", err)
	}
	if err := s.begin(); err != nil {
		return err
	}
	defer s.execs.Done()
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(sandboxkit.WriteTar(pw, hostPath, nil, path.Base(dst), 0, 0))
	}()
	defer pr.CloseWithError(io.ErrClosedPipe)
	argv := append([]string{"sh", "-c", copyInScript, "sanddune-copy-in", path.Dir(dst), path.Base(dst)}, s.roots...)
	if err := s.run(ctx, append(argv, "--"), pr, io.Discard); err != nil {
		return fmt.Errorf("kubernetes sandbox: copy in %s: %w", sandboxPath, err)
	}
	return nil
}

// CopyOut copies a sandbox file or directory to hostPath (the destination
// itself, not its parent) as a tar stream over exec.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	src, err := s.confine(sandboxPath)
	if err != nil {
		return fmt.Errorf("kubernetes sandbox: copy out: %w", err)
	}
	if err := s.begin(); err != nil {
		return err
	}
	defer s.execs.Done()
	pr, pw := io.Pipe()
	extracted := make(chan error, 1)
	go func() {
		err := sandboxkit.ExtractTar(pr, filepath.Clean(hostPath))
		pr.CloseWithError(err)
		extracted <- err
	}()
	argv := append([]string{"sh", "-c", copyOutScript, "sanddune-copy-out", src}, s.roots...)
	err = s.run(ctx, append(argv, "--"), nil, pw)
	pw.CloseWithError(err)
	if xerr := <-extracted; err == nil && xerr != nil {
		err = xerr
	}
	if err != nil {
		return fmt.Errorf("kubernetes sandbox: copy out %s: %w", sandboxPath, err)
	}
	return nil
}

func (s *sandbox) isRoot(p string) bool {
	for _, r := range s.roots {
		if p == r {
			return true
		}
	}
	return false
}

// run runs one of the provider's own scripts; a non-zero exit is an error
// carrying its stderr (exit 2: sdk.ErrNotFound).
func (s *sandbox) run(ctx context.Context, argv []string, stdin io.Reader, stdout io.Writer) error {
	var stderr bytes.Buffer
	err := s.stream(ctx, containerName, argv, stdin, stdout, &stderr)
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case s.isClosed():
		return errClosed
	case errors.As(err, &exit):
		msg := strings.TrimSpace(stderr.String())
		if exit.ExitStatus() == 2 {
			return fmt.Errorf("%s: %w", msg, sdk.ErrNotFound)
		}
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(msg)
	}
	return fmt.Errorf("exec in pod %s: %w", s.info.ID, err)
}
