// Package textfile reads user-named input files (config, prompt templates,
// .env) safely: regular files only (a FIFO or a device such as /dev/zero
// would block or never end), up to a size limit named in the error.
package textfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads the regular file at path, refusing anything else and files
// larger than limit bytes. Errors are *os.PathError for a missing file,
// else say what is wrong and name the limit.
func Read(path string, limit int64) ([]byte, error) {
	f, err := open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit { // grew while we read it
		return nil, fmt.Errorf("%s is more than the limit of %s", path, Size(limit))
	}
	return data, nil
}

// Check reports the error Read would give for the file at path, without
// reading it.
func Check(path string, limit int64) error {
	f, err := open(path, limit)
	if err == nil {
		f.Close()
	}
	return err
}

func open(path string, limit int64) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file (%s)", path, kind(fi.Mode()))
	case fi.Size() > limit:
		err = fmt.Errorf("%s is %s, more than the limit of %s", path, Size(fi.Size()), Size(limit))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// Size renders a byte count in KiB or MiB.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
