package opencode

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

// FuzzParse: no stream, however malformed, crashes the opencode parser.
func FuzzParse(f *testing.F) {
	agenttest.FuzzParser(f, func() sdk.Parser { return NewParser() }, "testdata/opencode-stream.jsonl")
}
