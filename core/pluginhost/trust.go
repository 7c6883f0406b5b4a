package pluginhost

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TrustStore is the user's record of the plugin binaries they trusted:
// $XDG_DATA_HOME/sanddune/trusted-plugins, one "<sha256>  <path>" line per
// binary (sha256sum's format). It lives outside every repository, so a
// cloned repository cannot trust its own binaries.
type TrustStore struct{ Path string }

// Trusted reports whether a binary with this SHA-256 was trusted.
func (s TrustStore) Trusted(sum string) (bool, error) {
	if s.Path == "" {
		return false, nil
	}
	f, err := os.Open(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("reading trusted plugins: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if have, _, _ := strings.Cut(sc.Text(), " "); have == sum {
			return true, nil
		}
	}
	return false, sc.Err()
}

// Trust records a binary as trusted. Appending a line is atomic, so
// concurrent calls lose nothing.
func (s TrustStore) Trust(sum, path string) error {
	if s.Path == "" {
		return errors.New("nowhere to record trusted plugins: set XDG_DATA_HOME or HOME")
	}
	if ok, err := s.Trusted(sum); err != nil || ok {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s  %s\n", sum, path); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// UntrustedError says a plugin binary was not started because the user has
// not trusted it yet.
type UntrustedError struct {
	Plugin string
	Path   string
	SHA256 string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("plugin %q not started: %s (SHA-256 %s) comes with the repository or the config, and you have not trusted it. "+
		"Review it, then run `sanddune plugins lock` in the repository to trust and pin it", e.Plugin, e.Path, e.SHA256)
}
