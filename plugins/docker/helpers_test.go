package docker

import (
	"io/fs"
	"syscall"

	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
)

func statUID(fi fs.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }

// partial counts the pieces of long lines that are not their last.
func partial(o *kittest.Output) int {
	n := 0
	for _, p := range o.Pieces {
		if p.Partial {
			n++
		}
	}
	return n
}
