package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// check is the release rehearsal: it publishes the checkout at a test
// version into a file proxy and, from empty directories, installs the
// CLI, uses core from a module of its own and builds a third-party plugin
// against the SDK alone, printing PASS or FAIL for each step.
func check(root string, args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	version := fs.String("version", "v0.99.0-rehearsal", "the test version to publish")
	keep := fs.Bool("keep", false, "keep the scratch directory")
	fs.Parse(args)
	scratch, err := os.MkdirTemp("", "sanddune-release-check-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Println("scratch directory:", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	proxy := filepath.Join(scratch, "proxy")
	env, err := goEnv(scratch, proxy)
	if err != nil {
		return err
	}
	r := rehearsal{root: root, scratch: scratch, proxy: proxy, version: *version, env: env}
	start := time.Now()
	failed := 0
	for _, s := range []struct {
		name string
		run  func() error
		gate bool // the later steps need what this one makes
	}{
		{"publish " + rootPath + " and its SDK at " + *version + " into a file proxy", r.publish, true},
		{"go install " + rootPath + "/cmd/sanddune@" + *version + "; sanddune version names it", r.install, true},
		{"the installed sanddune, alone, runs the quick start (its own bubblewrap and command built-ins); its commit lands", r.quickstart, false},
		{"a module requiring " + rootPath + "@" + *version + " runs a run through core", r.api, false},
		{"a copy of examples/ requiring only the SDK@" + *version + " builds a plugin that passes sanddune plugins test", r.plugin, false},
	} {
		t := time.Now()
		err := s.run()
		if err == nil {
			fmt.Printf("PASS  %s (%s)\n", s.name, time.Since(t).Round(time.Second))
			continue
		}
		failed++
		fmt.Printf("FAIL  %s (%s)\n%s\n", s.name, time.Since(t).Round(time.Second), indent(err.Error()))
		if s.gate {
			break
		}
	}
	fmt.Printf("release check: %s in total\n", time.Since(start).Round(time.Second))
	if failed > 0 {
		return fmt.Errorf("%d step(s) failed", failed)
	}
	return nil
}

type rehearsal struct {
	root, scratch, proxy, version string
	env                           []string
	sdkSum                        []string
}

func (r *rehearsal) bin(name string) string { return filepath.Join(r.scratch, "bin", name) }

func (r *rehearsal) dir(name string) (string, error) {
	d := filepath.Join(r.scratch, name)
	return d, os.MkdirAll(d, 0o755)
}

func (r *rehearsal) publish() error {
	sum, err := publish(r.root, r.proxy, r.version)
	r.sdkSum = sum
	return err
}

func (r *rehearsal) install() error {
	empty, err := r.dir("empty")
	if err != nil {
		return err
	}
	// sanddune alone: it serves every built-in but kubernetes itself.
	if _, err := run(empty, r.env, "go", "install", rootPath+"/cmd/sanddune@"+r.version); err != nil {
		return err
	}
	out, err := run(empty, r.env, r.bin("sanddune"), "version")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "sanddune "+r.version+" ") {
		return fmt.Errorf("sanddune version printed %q, want the version %s", strings.TrimSpace(out), r.version)
	}
	return nil
}

// gitRepo makes a git repository with one commit holding files (name →
// content) under dir.
func (r *rehearsal) gitRepo(name string, files map[string][]byte) (string, error) {
	repo, err := r.dir(name)
	if err != nil {
		return "", err
	}
	for f, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(repo, f), data, 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=release-check", "-c", "user.email=release-check@sanddune.invalid", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if _, err := run(repo, r.env, "git", args...); err != nil {
			return "", err
		}
	}
	return repo, nil
}

// lastSubject is the subject of branch's last commit in repo.
func (r *rehearsal) lastSubject(repo, branch string) (string, error) {
	out, err := run(repo, r.env, "git", "log", "-1", "--format=%s", branch)
	return strings.TrimSpace(out), err
}

func (r *rehearsal) quickstart() error {
	files := map[string][]byte{}
	for _, f := range []string{"sanddune.hcl", "prompt.md"} {
		data, err := os.ReadFile(filepath.Join(r.root, "examples", "quickstart", f))
		if err != nil {
			return err
		}
		files["examples/quickstart/"+f] = data
	}
	repo, err := r.gitRepo("quickstart", files)
	if err != nil {
		return err
	}
	if _, err := run(repo, r.runEnv(), r.bin("sanddune"), "run", "-c", "examples/quickstart/sanddune.hcl"); err != nil {
		return err
	}
	const want = "quickstart: note from the scripted agent"
	if got, err := r.lastSubject(repo, "sanddune/quickstart"); err != nil || got != want {
		return fmt.Errorf("last commit on sanddune/quickstart: %q (%v), want %q", got, err, want)
	}
	return nil
}

// runEnv is what sanddune runs with: its user data under the scratch dir.
func (r *rehearsal) runEnv() []string {
	return append(r.env, "XDG_DATA_HOME="+filepath.Join(r.scratch, "xdg", "data"),
		"XDG_CACHE_HOME="+filepath.Join(r.scratch, "xdg", "cache"), "XDG_STATE_HOME="+filepath.Join(r.scratch, "xdg", "state"))
}

func (r *rehearsal) api() error {
	prog, err := os.ReadFile(filepath.Join(r.root, "scripts", "release", "testdata", "apiuser", "main.go"))
	if err != nil {
		return err
	}
	mod := "module example.com/apiuser\n\ngo 1.26.0\n\nrequire " + rootPath + " " + r.version + "\n"
	dir, err := r.dir("apiuser")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), prog, 0o644); err != nil {
		return err
	}
	if _, err := run(dir, r.env, "go", "mod", "tidy"); err != nil {
		return err
	}
	repo, err := r.gitRepo("apirepo", nil)
	if err != nil {
		return err
	}
	if _, err := run(dir, r.runEnv(), "go", "run", ".", repo, "api/commit"); err != nil {
		return err
	}
	const want = "api: a commit from the Go API"
	if got, err := r.lastSubject(repo, "api/commit"); err != nil || got != want {
		return fmt.Errorf("last commit on api/commit: %q (%v), want %q", got, err, want)
	}
	return nil
}

func (r *rehearsal) plugin() error {
	if r.sdkSum == nil {
		return errors.New("the SDK was not published")
	}
	gomod, gosum, err := releaseFiles(filepath.Join(r.root, "examples", "go.mod"), filepath.Join(r.root, "examples", "go.sum"), r.version, r.sdkSum)
	if err != nil {
		return err
	}
	files, err := moduleFiles(r.root, "examples", map[string][]byte{"go.mod": gomod, "go.sum": gosum})
	if err != nil {
		return err
	}
	dir, err := r.dir("thirdparty")
	if err != nil {
		return err
	}
	for _, f := range files {
		rc, err := f.Open()
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Path()))
		err = os.MkdirAll(filepath.Dir(dst), 0o755)
		if err == nil {
			err = copyTo(dst, rc)
		}
		rc.Close()
		if err != nil {
			return err
		}
	}
	bin := filepath.Join(r.scratch, "plugins", "sanddune-plugin-tmpdir")
	if _, err := run(dir, r.env, "go", "build", "-o", bin, "./tmpdir-sandbox"); err != nil {
		return err
	}
	_, err = run(dir, r.runEnv(), r.bin("sanddune"), "plugins", "test", bin)
	return err
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ")
}
