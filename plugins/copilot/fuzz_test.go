package copilot

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

// FuzzParse: no stream, however malformed, crashes the copilot parser.
func FuzzParse(f *testing.F) {
	agentkittest.FuzzParser(f, func() sdk.Parser { return NewParser() }, "testdata/copilot-stream.jsonl", "testdata/copilot-401.jsonl")
}
