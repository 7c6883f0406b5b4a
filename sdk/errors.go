package sdk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrPluginShutdown means the plugin process exited or its connection
// closed while a call was in flight.
var ErrPluginShutdown = errors.New("plugin process exited or its connection closed")

// ErrNotSupported means the component does not implement an optional
// interface or operation. Providers may return it (wrapped) themselves.
var ErrNotSupported = errors.New("not supported by this plugin")

// ErrSandboxGone means the sandbox itself disappeared while in use: its
// container was removed or stopped, its VM deleted, from outside the run.
// Sandbox providers wrap it (fmt.Errorf("...: %w", sdk.ErrSandboxGone)) so
// the host can tell the user so, rather than blame the command that was
// running.
var ErrSandboxGone = errors.New("the sandbox disappeared")

// ErrNotFound means a sandbox path does not exist: CopyOut of a missing
// file, for example. Sandbox providers wrap it; an error matching
// fs.ErrNotExist counts too, and ErrNotFound itself matches fs.ErrNotExist.
var ErrNotFound error = notFound{}

type notFound struct{}

func (notFound) Error() string        { return "no such file or directory in the sandbox" }
func (notFound) Is(target error) bool { return target == fs.ErrNotExist }

// ErrConfinement means a path is outside what the sandbox may touch (its
// repository, home, /tmp and mounts), or would leave it through "..", a
// symlink or an archive entry. Sandbox providers wrap it.
var ErrConfinement = errors.New("path confinement violation")

// ErrUsage means a plugin command was given arguments it does not take (an
// unknown flag, a missing value): the host reports the error as a usage
// error (exit 2). RunCommand returns it as Usagef's error.
var ErrUsage = errors.New("usage error")

// Usagef is a usage error with its own message (matching ErrUsage).
func Usagef(format string, a ...any) error {
	return &usageError{fmt.Sprintf(format, a...)}
}

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// toStatus turns a provider's error into a gRPC status error (plugin end; sdk/host maps them back).
func toStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotSupported):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, ErrSandboxGone):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, ErrUsage):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, ErrConfinement):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}
