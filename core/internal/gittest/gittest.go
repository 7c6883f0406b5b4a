// Package gittest isolates tests that run real git from the machine's git
// configuration.
package gittest

import (
	"os"
	"path/filepath"
	"testing"
)

// Main runs a package's tests with git isolated: a private HOME, no global
// or system gitconfig, a fixed identity from env and LC_ALL=C. Tests never
// read or write the machine's git config. Use it as TestMain's body.
func Main(m *testing.M) {
	home, err := os.MkdirTemp("", "sanddune-git-test-home-")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]string{
		"HOME": home, "GIT_CONFIG_GLOBAL": filepath.Join(home, "gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Host User", "GIT_AUTHOR_EMAIL": "host@example.com",
		"GIT_COMMITTER_NAME": "Host User", "GIT_COMMITTER_EMAIL": "host@example.com", "LC_ALL": "C",
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
