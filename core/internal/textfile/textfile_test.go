package textfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadRefusesWhatIsNotABoundedRegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo: "is not a regular file (a FIFO)", "/dev/zero": "is not a regular file (a character device)",
		dir: "is not a regular file (a directory)", big: "is 2 KiB, more than the limit of 1 KiB",
	} {
		if _, err := Read(path, 1024); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	if data, err := Read(ok, 1024); err != nil || string(data) != "hello" {
		t.Errorf("regular file: %q, %v", data, err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), 1024); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}
