package worktree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Refs are read from the files git's default ref backend keeps (a loose
// file under the common dir, else a line of packed-refs; gitrepository-
// layout(5)) instead of starting a git process for each question. Git
// replaces those files by rename, so a read sees a whole value. What they
// cannot answer (a reftable repository, a ref file holding neither an
// object id nor a symbolic ref) is errAskGit, and the caller asks git.

// errAskGit says the files could not answer: ask git.
var errAskGit = errors.New("ask git")

// errNotFile is a ref, HEAD or gitdir path that is not a regular file:
// no such file, as far as sanddune is concerned.
var errNotFile = fmt.Errorf("not a regular file: %w", fs.ErrNotExist)

// readSmall reads a ref, HEAD or gitdir file. A sandbox can write those
// (refs, a worktree's admin dir): anything but a regular file is
// errNotFile, and opening never blocks (a FIFO would, until a writer came;
// git itself then waits).
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if fi.IsDir() {
		return nil, syscall.EISDIR
	} else if !fi.Mode().IsRegular() {
		return nil, errNotFile
	}
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

// filesBackend reports whether the repository keeps its refs in files
// (not reftable).
func (r *Repo) filesBackend() bool {
	_, err := os.Stat(filepath.Join(r.CommonDir, "reftable"))
	return errors.Is(err, fs.ErrNotExist)
}

// readRef returns the commit a shared ref (refs/heads/…, refs/tags/…)
// names, following symbolic refs; found is false when there is no such
// ref.
func (r *Repo) readRef(name string) (sha string, found bool, err error) {
	if !r.filesBackend() {
		return "", false, errAskGit
	}
	for range 5 {
		b, err := readSmall(filepath.Join(r.CommonDir, filepath.FromSlash(name)))
		switch {
		case err == nil:
			v, sym := refValue(string(b))
			switch {
			case sym:
				name = v
				continue
			case v == "":
				return "", false, errAskGit
			}
			return v, true, nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR):
		default:
			return "", false, err
		}
		var sha string
		err = r.packedRefs(func(ref, oid string) bool {
			if ref == name {
				sha = oid
				return false
			}
			return true
		})
		return sha, sha != "", err
	}
	return "", false, errAskGit
}

// refValue parses a loose ref or HEAD file: an object id, or (sym) the
// ref a symbolic ref names; "" when it is neither.
func refValue(s string) (v string, sym bool) {
	s = strings.TrimSpace(s)
	if t, ok := strings.CutPrefix(s, "ref:"); ok {
		return strings.TrimSpace(t), true
	}
	if isOID(s) {
		return s, false
	}
	return "", false
}

func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// packedRefs calls each with every ref of packed-refs until it returns
// false.
func (r *Repo) packedRefs(each func(ref, oid string) bool) error {
	f, err := os.Open(filepath.Join(r.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' { // header, peeled tag
			continue
		}
		oid, ref, ok := strings.Cut(line, " ")
		if !ok || !isOID(oid) {
			return errAskGit
		}
		if !each(ref, oid) {
			return nil
		}
	}
	return sc.Err()
}

// head reads the HEAD of the working tree whose git dir is gitDir: the
// branch checked out ("" when detached) and its commit ("" for a branch
// without commits).
func (r *Repo) head(gitDir string) (branch, sha string, err error) {
	b, err := readSmall(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", err
	}
	v, sym := refValue(string(b))
	switch {
	case v == "":
		return "", "", errAskGit
	case !sym:
		return "", v, nil
	}
	sha, _, err = r.readRef(v)
	return v, sha, err
}

// Tip returns the commit refs/heads/branch names, read from the files or
// else asked of git.
func (r *Repo) Tip(ctx context.Context, branch string) (string, error) {
	sha, ok, err := r.readRef("refs/heads/" + branch)
	switch {
	case errors.Is(err, errAskGit):
		return r.resolve(ctx, "refs/heads/"+branch)
	case err != nil:
		return "", err
	case !ok:
		return "", fmt.Errorf("there is no branch %s in %s", branch, r.Root)
	}
	return sha, nil
}

// Refs returns the repository's branches and tags (full ref name →
// object id, as `git for-each-ref refs/heads refs/tags` names them),
// read from the files when it can.
func (r *Repo) Refs(ctx context.Context) (map[string]string, error) {
	refs, err := r.readRefs("refs/heads", "refs/tags")
	if !errors.Is(err, errAskGit) {
		return refs, err
	}
	out, err := r.Git(ctx, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
	if err != nil {
		return nil, err
	}
	refs = map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, sha, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs, nil
}

// readRefs reads every ref under the prefixes: the loose files first,
// then packed-refs for those not loose (git's own order, so a ref that
// `git pack-refs` moves meanwhile is found in one or the other).
func (r *Repo) readRefs(prefixes ...string) (map[string]string, error) {
	if !r.filesBackend() {
		return nil, errAskGit
	}
	refs := map[string]string{}
	for _, p := range prefixes {
		root := filepath.Join(r.CommonDir, filepath.FromSlash(p))
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil // gone meanwhile: in packed-refs, or deleted
			case err != nil:
				return err
			case d.IsDir() || strings.HasSuffix(path, ".lock"):
				return nil
			}
			rel, _ := filepath.Rel(r.CommonDir, path)
			name := filepath.ToSlash(rel)
			sha, ok, err := r.readRef(name)
			if err != nil {
				return err
			}
			if ok {
				refs[name] = sha
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	err := r.packedRefs(func(ref, oid string) bool {
		for _, p := range prefixes {
			if _, loose := refs[ref]; !loose && strings.HasPrefix(ref, p+"/") {
				refs[ref] = oid
			}
		}
		return true
	})
	return refs, err
}
