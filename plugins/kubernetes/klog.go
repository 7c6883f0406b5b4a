package kubernetes

import (
	"strings"

	"github.com/go-logr/logr/funcr"
	"github.com/hashicorp/go-hclog"
	"k8s.io/klog/v2"
)

// routeKlog sends client-go's own log lines (klog: "Unhandled Error" when an
// exec stream's pipe closes at the end of a run, and the like) to log at
// debug level. Written to stderr, the host would show them to the user as
// warnings of the plugin.
// klog is process-wide: the last provider made sets it.
func routeKlog(log hclog.Logger) {
	klog.SetLogger(funcr.New(func(prefix, args string) {
		log.Debug(strings.TrimSpace(prefix + " " + args))
	}, funcr.Options{}))
}
