package host

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/missingstudio/sanddune/sdk"
)

// fromStatus turns an error from a gRPC call into the SDK's errors (host
// end): caller cancellation gives ctx.Err(), a dead plugin
// sdk.ErrPluginShutdown, everything else a callError naming op.
func (c *conn) fromStatus(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	st, ok := status.FromError(err)
	if !ok {
		return &callError{plugin: c.component, op: op, err: err}
	}
	switch {
	case c.done.Err() != nil, st.Code() == codes.Unavailable:
		return &callError{plugin: c.component, op: op, err: sdk.ErrPluginShutdown}
	case st.Code() == codes.Canceled && strings.Contains(st.Message(), "connection is closing"):
		return &callError{plugin: c.component, op: op, err: sdk.ErrPluginShutdown}
	case st.Code() == codes.Unimplemented:
		return &callError{plugin: c.component, op: op, err: notSupported(st.Message())}
	case st.Code() == codes.Aborted:
		return &callError{plugin: c.component, op: op, err: &wrapped{msg: st.Message(), err: sdk.ErrSandboxGone}}
	case st.Code() == codes.Canceled:
		return &callError{plugin: c.component, op: op, err: context.Canceled}
	case st.Code() == codes.InvalidArgument && op == "RunCommand":
		return &callError{plugin: c.component, op: op, err: &wrapped{msg: st.Message(), err: sdk.ErrUsage}}
	case st.Code() == codes.NotFound:
		return &callError{plugin: c.component, op: op, err: &wrapped{msg: st.Message(), err: sdk.ErrNotFound}}
	case st.Code() == codes.PermissionDenied:
		return &callError{plugin: c.component, op: op, err: &wrapped{msg: st.Message(), err: sdk.ErrConfinement}}
	case st.Code() == codes.DeadlineExceeded:
		return &callError{plugin: c.component, op: op, err: context.DeadlineExceeded}
	}
	return &callError{plugin: c.component, op: op, err: errors.New(st.Message())}
}

// notSupported keeps the plugin's message while matching sdk.ErrNotSupported.
func notSupported(msg string) error {
	if msg == "" || msg == sdk.ErrNotSupported.Error() {
		return sdk.ErrNotSupported
	}
	return &wrapped{msg: msg, err: sdk.ErrNotSupported}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// callError is an error from a call to a plugin: plugin names the component
// (empty for plugin-wide calls) and op the operation (Exec, Create, ...).
// It unwraps to the plugin's own error.
type callError struct {
	plugin, op string
	err        error
}

func (e *callError) Error() string {
	if e.plugin == "" {
		return e.op + ": " + e.err.Error()
	}
	return "plugin " + e.plugin + ": " + e.op + ": " + e.err.Error()
}

func (e *callError) Unwrap() error { return e.err }
