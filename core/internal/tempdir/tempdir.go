// Package tempdir makes sanddune's temporary directories, named after the
// process that owns them: `$TMPDIR/sanddune-<kind>-<pid>-<random>`. A
// killed sanddune cannot clean up after itself: `sanddune gc` removes the
// directories whose Owner is dead.
package tempdir

import (
	"os"
	"regexp"
	"strconv"
)

// Make creates a new temporary directory of kind (e.g. "sync") owned by
// this process.
func Make(kind string) (string, error) {
	return os.MkdirTemp("", "sanddune-"+kind+"-"+strconv.Itoa(os.Getpid())+"-")
}

var nameRE = regexp.MustCompile(`^sanddune-([a-z]+)-([0-9]+)-[0-9]+$`)

// Owner returns the pid of the process that made the temporary directory
// name (a base name), and false when Make did not make it.
func Owner(name string) (int, bool) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[2])
	return pid, err == nil && pid > 0
}
