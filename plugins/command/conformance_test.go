package command_test

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

var cfg = cty.ObjectVal(map[string]cty.Value{
	"command": cty.ListVal([]cty.Value{cty.StringVal("sh"), cty.StringVal("-c"), cty.StringVal("cat")}),
	"env":     cty.MapVal(map[string]cty.Value{"GREETING": cty.StringVal("hi")}),
})

func TestConformance(t *testing.T) {
	t.Parallel()
	agenttest.Run(t, command.New(), cfg)
}

func TestReplay(t *testing.T) {
	t.Parallel()
	agenttest.Replay(t, command.New(), cfg,
		agenttest.Case{
			Name:  "plain lines",
			Lines: []string{"hello", "", "<promise>COMPLETE</promise>"},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: "hello"},
				{Type: sdk.EventText, Text: ""},
				{Type: sdk.EventText, Text: "<promise>COMPLETE</promise>"},
			},
		},
		agenttest.Case{
			Name:  "json is text too",
			Lines: []string{`{"type":"result","result":"done"}`},
			Want:  []sdk.Event{{Type: sdk.EventText, Text: `{"type":"result","result":"done"}`}},
		},
	)
}
