package ask

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestAnswers(t *testing.T) {
	in := strings.NewReader("\n3\nnope\npodman\n\n  gpt-5  \nbad\ngood\nmaybe\ny\n")
	var out strings.Builder
	p := New(t.Context(), in, &out)
	opts := []Option{{"docker: containers", "docker"}, {"podman: rootless", "podman"}, {"local", "local"}}
	steps := []struct {
		ask  func() (any, error)
		want any
	}{
		{func() (any, error) { return p.Select("Sandbox", opts) }, "docker"}, // empty: the first
		{func() (any, error) { return p.Select("Sandbox", opts) }, "local"},  // by number
		{func() (any, error) { return p.Select("Sandbox", opts) }, "podman"}, // "nope" refused, then by value
		{func() (any, error) { return p.Input("Model", "opus", nil) }, "opus"},
		{func() (any, error) { return p.Input("Model", "opus", nil) }, "gpt-5"},
		{func() (any, error) {
			return p.Input("Command", "", func(s string) error {
				if s != "good" {
					return errors.New("needs to be good")
				}
				return nil
			})
		}, "good"},
		{func() (any, error) { return p.Confirm("Build?", false) }, true}, // "maybe" refused
	}
	for i, st := range steps {
		got, err := st.ask()
		if err != nil || got != st.want {
			t.Fatalf("question %d: %v, %v; want %v\n%s", i, got, err, st.want, out.String())
		}
	}
	for _, want := range []string{"Sandbox:\n  1) docker: containers\n  2) podman: rootless\n  3) local\nChoose 1-3 [1]: ",
		`"nope" is not one of the choices`, "Model [opus]: ", "  needs to be good\n", "Build? [y/N]: ", "answer y or n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := p.Confirm("More?", true); !errors.Is(err, ErrCancelled) {
		t.Errorf("at the end of the input: %v, want ErrCancelled", err)
	}
}

func TestCancelledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	in, w := io.Pipe()
	defer w.Close()
	p := New(ctx, in, io.Discard)
	cancel()
	if _, err := p.Input("Model", "x", nil); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
}
