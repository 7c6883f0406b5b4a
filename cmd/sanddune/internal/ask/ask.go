// Package ask asks questions on a terminal, one line each: pick from a
// numbered list, type a text, answer yes or no. It reads cooked lines, so
// the terminal edits them and Ctrl-C is the shell's usual signal; it sends
// no queries to the terminal and needs no raw mode.
package ask

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrCancelled is returned once the context ends or the input is closed
// before an answer.
var ErrCancelled = errors.New("cancelled")

// Option is one choice of a Select: what is shown and what is returned.
type Option struct {
	Label, Value string
}

// Prompter asks on Out and reads the answers from In.
type Prompter struct {
	ctx   context.Context
	out   io.Writer
	lines chan string
}

// New returns a Prompter that stops asking once ctx ends.
func New(ctx context.Context, in io.Reader, out io.Writer) *Prompter {
	p := &Prompter{ctx: ctx, out: out, lines: make(chan string)}
	go func() { // ends with the input; a blocked read outlives ctx, the process ends it
		defer close(p.lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

// line prints prompt and returns the next line, trimmed.
func (p *Prompter) line(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	select {
	case s, ok := <-p.lines:
		if !ok {
			fmt.Fprintln(p.out)
			return "", ErrCancelled
		}
		return strings.TrimSpace(s), nil
	case <-p.ctx.Done():
		fmt.Fprintln(p.out)
		return "", ErrCancelled
	}
}

// Select asks for one of opts, the first by default: its number or its
// value is an answer, an empty line the default.
func (p *Prompter) Select(title string, opts []Option) (string, error) {
	fmt.Fprintf(p.out, "%s:\n", title)
	for i, o := range opts {
		fmt.Fprintf(p.out, "  %d) %s\n", i+1, o.Label)
	}
	for {
		s, err := p.line(fmt.Sprintf("Choose 1-%d [1]: ", len(opts)))
		if err != nil {
			return "", err
		}
		if s == "" {
			return opts[0].Value, nil
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(opts) {
			return opts[n-1].Value, nil
		}
		for _, o := range opts {
			if o.Value == s {
				return o.Value, nil
			}
		}
		fmt.Fprintf(p.out, "  %q is not one of the choices: type its number\n", s)
	}
}

// Input asks for a text; an empty line is def. check (may be nil) refuses
// an answer with a reason, and the question is asked again.
func (p *Prompter) Input(title, def string, check func(string) error) (string, error) {
	prompt := title + ": "
	if def != "" {
		prompt = fmt.Sprintf("%s [%s]: ", title, def)
	}
	for {
		s, err := p.line(prompt)
		if err != nil {
			return "", err
		}
		if s == "" {
			s = def
		}
		if check == nil {
			return s, nil
		}
		if err := check(s); err != nil {
			fmt.Fprintf(p.out, "  %v\n", err)
			continue
		}
		return s, nil
	}
}

// Confirm asks a yes/no question; an empty line is def.
func (p *Prompter) Confirm(title string, def bool) (bool, error) {
	hint := "[y/N]"
	if def {
		hint = "[Y/n]"
	}
	for {
		s, err := p.line(fmt.Sprintf("%s %s: ", title, hint))
		if err != nil {
			return false, err
		}
		switch strings.ToLower(s) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
		fmt.Fprintln(p.out, "  answer y or n")
	}
}
