package enginetest

import (
	"io"
	"os"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestMain(m *testing.M) {
	// go-plugin's in-process test connections log every stream's end at
	// debug level on hclog's default output; keep test and benchmark
	// output readable.
	hclog.DefaultOutput = io.Discard
	os.Exit(m.Run())
}
