package pluginhost

import (
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/core/internal/redact"
)

// secrets are the redactors of the runs planned so far: what the plugins
// log and write on stderr goes through every one of them, like every
// other sink sanddune writes.
type secrets struct {
	mu  sync.Mutex
	all []*redact.Redactor
}

// Redact hides the secret values r knows in everything the plugins log or
// write on stderr from now on (core.Plan adds each run's).
func (h *Host) Redact(r *redact.Redactor) {
	if r == nil {
		return
	}
	h.secrets.mu.Lock()
	h.secrets.all = append(h.secrets.all, r)
	h.secrets.mu.Unlock()
}

func (s *secrets) string(v string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.all {
		v = r.String(v)
	}
	return v
}

// redactingLogger passes a plugin's log lines on with secret values
// hidden in the message and in every argument.
type redactingLogger struct {
	hclog.Logger
	s *secrets
}

func (l redactingLogger) args(args []interface{}) []interface{} {
	out := make([]interface{}, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = l.s.string(v)
		case error, fmt.Stringer:
			out[i] = l.s.string(fmt.Sprint(v))
		default:
			if s := fmt.Sprint(v); l.s.string(s) != s {
				out[i] = l.s.string(s)
			} else {
				out[i] = a
			}
		}
	}
	return out
}

func (l redactingLogger) Log(level hclog.Level, msg string, args ...interface{}) {
	l.Logger.Log(level, l.s.string(msg), l.args(args)...)
}
func (l redactingLogger) Trace(msg string, args ...interface{}) { l.Log(hclog.Trace, msg, args...) }
func (l redactingLogger) Debug(msg string, args ...interface{}) { l.Log(hclog.Debug, msg, args...) }
func (l redactingLogger) Info(msg string, args ...interface{})  { l.Log(hclog.Info, msg, args...) }
func (l redactingLogger) Warn(msg string, args ...interface{})  { l.Log(hclog.Warn, msg, args...) }
func (l redactingLogger) Error(msg string, args ...interface{}) { l.Log(hclog.Error, msg, args...) }

func (l redactingLogger) With(args ...interface{}) hclog.Logger {
	return redactingLogger{l.Logger.With(l.args(args)...), l.s}
}
func (l redactingLogger) Named(name string) hclog.Logger {
	return redactingLogger{l.Logger.Named(name), l.s}
}
func (l redactingLogger) ResetNamed(name string) hclog.Logger {
	return redactingLogger{l.Logger.ResetNamed(name), l.s}
}
