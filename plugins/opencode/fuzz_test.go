package opencode

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

// FuzzParse: no stream, however malformed, crashes the opencode parser.
func FuzzParse(f *testing.F) {
	agentkittest.FuzzParser(f, func() sdk.Parser { return NewParser() }, "testdata/opencode-stream.jsonl")
}
