package kubernetes

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// TestClientGoErrorsAreDebugLines: client-go's "Unhandled Error" lines
// (klog) reach the plugin's logger at debug level, not stderr, where the
// host shows a plugin's lines as warnings.
func TestClientGoErrorsAreDebugLines(t *testing.T) {
	var buf bytes.Buffer
	routeKlog(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace}))
	utilruntime.HandleError(errors.New("io: read/write on closed pipe"))
	out := buf.String()
	if !strings.Contains(out, "[DEBUG]") || !strings.Contains(out, "io: read/write on closed pipe") {
		t.Fatalf("the logger has no debug line for client-go's error:\n%s", out)
	}
}
