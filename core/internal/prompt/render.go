package prompt

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// DefaultExpressionTimeout bounds each shell expression.
const DefaultExpressionTimeout = 30 * time.Second

// MaxExpressionOutput caps the stdout of one shell expression.
const MaxExpressionOutput = 16 << 20

const stderrTail = 4 << 10

// Prompt is a filled template: literal text and shell expressions.
type Prompt struct {
	parts []part
}

type part struct {
	text  string
	shell bool
	expr  string            // as written in the template
	cmd   string            // with placeholders turned into variables
	env   map[string]string // the variables
}

// Expressions lists the prompt's shell expressions as written.
func (p *Prompt) Expressions() []string {
	var out []string
	for _, pt := range p.parts {
		if pt.shell {
			out = append(out, pt.expr)
		}
	}
	return out
}

// Executor runs a command in the sandbox; sdk.Sandbox implements it.
type Executor interface {
	Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error)
}

// RenderOptions tune Render.
type RenderOptions struct {
	// Timeout bounds each expression (DefaultExpressionTimeout when zero).
	Timeout time.Duration
	// Expanded, when set, is told each expression's output size.
	Expanded func(expr string, bytes int)
}

// ExpressionError is a shell expression that failed.
type ExpressionError struct {
	Expr     string
	ExitCode int
	TimedOut bool
	Timeout  time.Duration
	Stderr   string // tail
	Err      error  // transport or cancellation error
}

func (e *ExpressionError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("shell expression !`%s`: %v", e.Expr, e.Err)
	case e.TimedOut:
		return fmt.Sprintf("shell expression !`%s` timed out after %s", e.Expr, e.Timeout)
	}
	msg := fmt.Sprintf("shell expression !`%s` exited with code %d", e.Expr, e.ExitCode)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

func (e *ExpressionError) Unwrap() error { return e.Err }

// Render runs the shell expressions in the sandbox, all in parallel, and
// returns the prompt text. The first failure cancels the others.
func (p *Prompt) Render(ctx context.Context, ex Executor, opts RenderOptions) (string, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultExpressionTimeout
	}
	outs := make([]string, len(p.parts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i, pt := range p.parts {
		if !pt.shell {
			outs[i] = pt.text
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := runExpression(ctx, ex, pt, timeout)
			if err != nil {
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			outs[i] = s
			if opts.Expanded != nil {
				opts.Expanded(pt.expr, len(s))
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return "", firstErr
	}
	return strings.Join(outs, ""), nil
}

func runExpression(ctx context.Context, ex Executor, pt part, timeout time.Duration) (string, error) {
	// The provider enforces Timeout; the context is a backstop for one that
	// does not.
	ectx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	var (
		stdout   bytes.Buffer
		stderr   tail
		overflow bool
	)
	stderr.max = stderrTail
	res, err := ex.Exec(ectx, sdk.ExecRequest{Shell: pt.cmd, Env: pt.env, Timeout: timeout}, func(l sdk.OutputLine) {
		if l.Stream == sdk.Stderr {
			stderr.write(l.Text, !l.Partial)
			return
		}
		if overflow {
			return
		}
		if stdout.Len()+len(l.Text)+1 > MaxExpressionOutput {
			overflow = true
			return
		}
		stdout.Write(l.Text)
		if !l.Partial {
			stdout.WriteByte('\n')
		}
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return "", &ExpressionError{Expr: pt.expr, Err: context.Cause(ctx)}
	case err != nil && ectx.Err() != nil:
		return "", &ExpressionError{Expr: pt.expr, TimedOut: true, Timeout: timeout}
	case err != nil:
		return "", &ExpressionError{Expr: pt.expr, Err: err}
	case res.TimedOut:
		return "", &ExpressionError{Expr: pt.expr, TimedOut: true, Timeout: timeout}
	case res.ExitCode != 0:
		return "", &ExpressionError{Expr: pt.expr, ExitCode: res.ExitCode, Stderr: stderr.String()}
	case overflow:
		return "", &ExpressionError{Expr: pt.expr, Err: fmt.Errorf("output exceeds %d MiB", MaxExpressionOutput>>20)}
	}
	return strings.TrimRight(stdout.String(), " \t\r\n"), nil
}

// tail keeps the last max bytes of line-oriented output.
type tail struct {
	max int
	buf []byte
}

func (t *tail) write(p []byte, eol bool) {
	t.buf = append(t.buf, p...)
	if eol {
		t.buf = append(t.buf, '\n')
	}
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
}

func (t *tail) String() string { return string(t.buf) }
