package redact

import (
	"errors"
	"io/fs"
	"testing"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := New(map[string]string{"TOKEN": "abcdef123", "LONG": "abcdef123-and-more", "SHORT": "dev", "SAME": "abcdef123"})
	got := r.String("t=abcdef123 l=abcdef123-and-more s=dev")
	if want := "t=[redacted SAME] l=[redacted LONG] s=dev"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	err := r.Error(&fs.PathError{Op: "open", Path: "abcdef123", Err: fs.ErrNotExist})
	var pe *fs.PathError
	if err.Error() != "open [redacted SAME]: file does not exist" || !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error: %v", err)
	}
	var none *Redactor
	if none.String("abcdef123") != "abcdef123" || New(map[string]string{"A": "x"}) != nil {
		t.Error("a nil Redactor changed its input, or short values made one")
	}
}
