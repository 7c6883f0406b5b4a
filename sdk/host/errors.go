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
// sdk.ErrPluginShutdown, everything else a sdk.PluginError naming op.
func (c *conn) fromStatus(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	st, ok := status.FromError(err)
	if !ok {
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: err}
	}
	switch {
	case c.done.Err() != nil, st.Code() == codes.Unavailable:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: sdk.ErrPluginShutdown}
	case st.Code() == codes.Canceled && strings.Contains(st.Message(), "connection is closing"):
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: sdk.ErrPluginShutdown}
	case st.Code() == codes.Unimplemented:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: notSupported(st.Message())}
	case st.Code() == codes.Aborted:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: &wrapped{msg: st.Message(), err: sdk.ErrSandboxGone}}
	case st.Code() == codes.Canceled:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: context.Canceled}
	case st.Code() == codes.InvalidArgument && op == "RunCommand":
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: &wrapped{msg: st.Message(), err: sdk.ErrUsage}}
	case st.Code() == codes.NotFound:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: &wrapped{msg: st.Message(), err: sdk.ErrNotFound}}
	case st.Code() == codes.PermissionDenied:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: &wrapped{msg: st.Message(), err: sdk.ErrConfinement}}
	case st.Code() == codes.DeadlineExceeded:
		return &sdk.PluginError{Plugin: c.component, Op: op, Err: context.DeadlineExceeded}
	}
	return &sdk.PluginError{Plugin: c.component, Op: op, Err: errors.New(st.Message())}
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
