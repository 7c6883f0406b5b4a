package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScript runs the CLI scripts in testdata/script: each drives the
// built sanddune binary in a scratch directory ($WORK) and checks its exit
// code and output. Besides testscript's commands they have:
//
//	exits CODE PROGRAM [ARGS...]  run PROGRAM; fail unless it exits CODE
//	repo DIR                      make DIR a git repository with one commit
//
// $SANDDUNE is the binary's path (for scripts that empty PATH).
func TestScript(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(sanddune)+":"+env.Getenv("PATH"))
			env.Setenv("SANDDUNE", sanddune)
			env.Setenv("SANDDUNE_PLUGIN_PATH", pluginDir)
			env.Setenv("XDG_DATA_HOME", filepath.Join(env.WorkDir, ".xdg"))
			env.Setenv("PLUGIN_DIR", pluginDir)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				var exit *exec.ExitError
				if err := ts.Exec(args[1], args[2:]...); errors.As(err, &exit) {
					got = exit.ExitCode()
				} else {
					ts.Check(err)
				}
				if got != want {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
			"repo": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: repo DIR")
				}
				ts.Check(initRepo(ts.MkAbs(args[0])))
			},
		},
	})
}
