package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Repo is a host git repository seen from one of its working trees.
type Repo struct {
	// Root is the top of the working tree (`git rev-parse --show-toplevel`).
	Root string
	// GitDir is this working tree's git dir; CommonDir the repository's
	// shared git dir (equal unless Root is itself a linked worktree).
	GitDir    string
	CommonDir string

	ident *identity // Identity's answer, asked once (nil: asked each time)
}

type identity struct {
	once        sync.Once
	name, email string
}

// Open finds the git working tree containing dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := checkDir(dir)
	if err != nil {
		return nil, err
	}
	out, err := Git(ctx, abs, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return nil, notARepo(abs, err)
	}
	return parseRepo(abs, strings.Split(out, "\n"))
}

// OpenCheckout is Open plus Checkout in one git call: the working tree
// containing dir, its HEAD commit and its branch ("" when detached). A
// repository without commits is opened, with ErrNoCommits.
func OpenCheckout(ctx context.Context, dir string) (r *Repo, commit, branch string, err error) {
	abs, err := checkDir(dir)
	if err != nil {
		return nil, "", "", err
	}
	out, err := Git(ctx, abs, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "HEAD", "--symbolic-full-name", "HEAD")
	if err != nil {
		// Without commits HEAD does not resolve: tell that from no repo.
		if r, err = Open(ctx, dir); err != nil {
			return nil, "", "", err
		}
		return r, "", "", ErrNoCommits
	}
	ls := strings.Split(out, "\n")
	if len(ls) != 5 {
		return nil, "", "", fmt.Errorf("%s: unexpected git rev-parse output %q", abs, out)
	}
	if r, err = parseRepo(abs, ls[:3]); err != nil {
		return nil, "", "", err
	}
	commit, branch = checkout(ls[3], ls[4])
	return r, commit, branch, nil
}

// ErrNoCommits: the repository has no commit checked out.
var ErrNoCommits = errors.New("HEAD names no commit")

func checkDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

func notARepo(abs string, err error) error {
	if errors.Is(err, ErrGitMissing) {
		return err
	}
	return fmt.Errorf("%s is not inside a git working tree: %w", abs, err)
}

// parseRepo reads the output of rev-parse --show-toplevel
// --absolute-git-dir --git-common-dir run in abs.
func parseRepo(abs string, ls []string) (*Repo, error) {
	if len(ls) != 3 || ls[0] == "" {
		return nil, fmt.Errorf("%s is not inside a git working tree", abs)
	}
	common := ls[2]
	if !filepath.IsAbs(common) {
		common = filepath.Join(abs, common)
	}
	return &Repo{Root: filepath.Clean(ls[0]), GitDir: filepath.Clean(ls[1]), CommonDir: filepath.Clean(common), ident: &identity{}}, nil
}

// checkout reads rev-parse's HEAD and --symbolic-full-name HEAD.
func checkout(commit, ref string) (string, string) {
	if ref == "HEAD" {
		return commit, "" // detached
	}
	return commit, strings.TrimPrefix(ref, "refs/heads/")
}

// Git runs git in the repo root.
func (r *Repo) Git(ctx context.Context, args ...string) (string, error) {
	return Git(ctx, r.Root, args...)
}

// StateDir returns <Root>/.sanddune joined with elem.
func (r *Repo) StateDir(elem ...string) string {
	return filepath.Join(append([]string{r.Root, StateDirName}, elem...)...)
}

// CurrentBranch returns the branch checked out in Root, or "" when HEAD is
// detached.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	return currentBranch(ctx, r.Root)
}

func currentBranch(ctx context.Context, dir string) (string, error) {
	out, err := Git(ctx, dir, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil // detached
		}
		return "", err
	}
	return strings.TrimPrefix(out, "refs/heads/"), nil
}

// Checkout returns the commit checked out in Root, its branch ("" when
// HEAD is detached) and whether tracked files have uncommitted changes,
// in one git call.
func (r *Repo) Checkout(ctx context.Context) (commit, branch string, dirty bool, err error) {
	out, err := Git(ctx, r.Root, "status", "--porcelain=v2", "--branch", "--untracked-files=no")
	if err != nil {
		return "", "", false, fmt.Errorf("reading HEAD: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "# branch.oid "):
			commit = strings.TrimPrefix(line, "# branch.oid ")
		case strings.HasPrefix(line, "# branch.head "):
			branch = strings.TrimPrefix(line, "# branch.head ")
		case line != "" && !strings.HasPrefix(line, "#"):
			dirty = true
		}
	}
	if commit == "" || commit == "(initial)" {
		return "", "", false, fmt.Errorf("reading HEAD: %w", ErrNoCommits)
	}
	if branch == "(detached)" {
		branch = ""
	}
	return commit, branch, dirty, nil
}

// Identity returns the author name and email git commits with here (its
// env, else user.name and user.email), in one git call for all the runs
// of an opened repo; "" when git knows none.
func (r *Repo) Identity(ctx context.Context) (name, email string) {
	if r.ident == nil {
		return identityOf(ctx, r.Root)
	}
	// Not cut short by one run's cancellation: the answer is every run's.
	r.ident.once.Do(func() { r.ident.name, r.ident.email = identityOf(context.WithoutCancel(ctx), r.Root) })
	return r.ident.name, r.ident.email
}

// PrefetchIdentity starts asking git for Identity's answer in the
// background, when an opened repo keeps it: a later Identity waits for
// it rather than asking again.
func (r *Repo) PrefetchIdentity(ctx context.Context) {
	if r.ident != nil {
		go r.Identity(ctx)
	}
}

func identityOf(ctx context.Context, root string) (name, email string) {
	out, err := Git(ctx, root, "var", "GIT_AUTHOR_IDENT")
	if m := identRE.FindStringSubmatch(out); err == nil && m != nil {
		return m[1], m[2]
	}
	return "", ""
}

var identRE = regexp.MustCompile(`^(.*) <(.*)> \d+ [+-]\d{4}$`)

// resolve returns the commit rev names.
func (r *Repo) resolve(ctx context.Context, rev string) (string, error) {
	return Git(ctx, r.Root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
}

// base returns the commit a new branch starts from: rev, or Root's HEAD
// when rev is "" (read from the files when it can).
func (r *Repo) base(ctx context.Context, rev string) (string, error) {
	if rev == "" {
		if _, sha, err := r.head(r.GitDir); err == nil && sha != "" {
			return sha, nil
		}
	}
	return r.resolve(ctx, orHEAD(rev))
}

// branchExists reports whether refs/heads/name exists.
func (r *Repo) branchExists(ctx context.Context, name string) (bool, error) {
	if _, ok, err := r.readRef("refs/heads/" + name); !errors.Is(err, errAskGit) {
		return ok, err
	}
	_, err := Git(ctx, r.Root, "show-ref", "--verify", "--quiet", "refs/heads/"+name)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// Commit is one commit made by a run.
type Commit struct {
	SHA         string `json:"sha"`
	Subject     string `json:"subject"`
	Author      string `json:"author"`
	AuthorEmail string `json:"author_email"`

	parents string // space-separated, as rev-list's %P
}

// Short returns the abbreviated sha.
func (c Commit) Short() string {
	if len(c.SHA) > 7 {
		return c.SHA[:7]
	}
	return c.SHA
}

func (c Commit) String() string { return c.Short() + " " + c.Subject }

// Commits lists the commits reachable from ref but not from base, oldest
// first (`git rev-list --reverse base..ref`), merges included.
func (r *Repo) Commits(ctx context.Context, base, ref string) ([]Commit, error) {
	return commits(ctx, r.Root, base, ref)
}

func commits(ctx context.Context, dir, base, ref string) ([]Commit, error) {
	out, err := Git(ctx, dir, "rev-list", "--reverse", "--no-commit-header",
		"--format=%H%x00%an%x00%ae%x00%P%x00%s%x1e", base+".."+ref, "--")
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
		if len(f) != 5 {
			continue
		}
		cs = append(cs, Commit{SHA: f[0], Author: f[1], AuthorEmail: f[2], Subject: f[4], parents: f[3]})
	}
	return cs, nil
}

// Dirty reports whether the working tree at dir has staged, unstaged or
// untracked (not ignored) changes, per `git status --porcelain`. Commits
// not pushed anywhere do not make a tree dirty.
func Dirty(ctx context.Context, dir string) (bool, error) {
	out, err := Git(ctx, dir, "-c", "core.fsmonitor=false", "status", "--porcelain", "--ignore-submodules=none")
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) != "", nil
}

// dirtyPaths lists the paths `git status --porcelain -uall` reports in dir
// (both sides of renames).
func dirtyPaths(ctx context.Context, dir string) ([]string, error) {
	out, err := Git(ctx, dir, "-c", "core.fsmonitor=false", "status", "--porcelain", "-z", "-uall")
	if err != nil {
		return nil, err
	}
	var paths []string
	recs := strings.Split(out, "\x00")
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 4 {
			continue
		}
		paths = append(paths, rec[3:])
		if rec[0] == 'R' || rec[0] == 'C' { // the next record is the source
			i++
			if i < len(recs) && recs[i] != "" {
				paths = append(paths, recs[i])
			}
		}
	}
	return paths, nil
}
