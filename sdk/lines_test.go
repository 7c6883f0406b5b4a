package sdk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

type piece struct {
	text    string
	partial bool
}

func collect(writes []string) []piece {
	var got []piece
	w := sdk.NewLineWriter(sdk.Stderr, func(l sdk.OutputLine) {
		if l.Stream != sdk.Stderr {
			panic("wrong stream")
		}
		got = append(got, piece{string(l.Text), l.Partial})
	})
	for _, s := range writes {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			panic(fmt.Sprint(n, err))
		}
	}
	_ = w.Close()
	return got
}

func TestLineWriter(t *testing.T) {
	t.Parallel()
	max := sdk.MaxLineBytes
	long := strings.Repeat("a", max)
	for _, tc := range []struct {
		name   string
		writes []string
		want   []piece
	}{
		{"empty", nil, nil},
		{"lines", []string{"a\nb\n"}, []piece{{"a", false}, {"b", false}}},
		{"split writes", []string{"he", "llo\nwo", "rld\n"}, []piece{{"hello", false}, {"world", false}}},
		{"empty lines", []string{"\n\nx\n"}, []piece{{"", false}, {"", false}, {"x", false}}},
		{"unterminated", []string{"a\nlast"}, []piece{{"a", false}, {"last", false}}},
		{"exactly max", []string{long + "\n"}, []piece{{long, false}}},
		{"max plus one", []string{long + "b\n"}, []piece{{long, true}, {"b", false}}},
		{"long in small writes", []string{long[:10], long[10:], "bc", "\nz\n"}, []piece{{long, true}, {"bc", false}, {"z", false}}},
		{"two max unterminated", []string{long + long}, []piece{{long, true}, {long, false}}},
		{"crlf kept", []string{"a\r\n"}, []piece{{"a\r", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(tc.writes)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %d pieces %v, want %d %v", len(got), short(got), len(tc.want), short(tc.want))
			}
		})
	}
}

func short(ps []piece) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d:%v", len(p.text), p.partial))
	}
	return out
}

func BenchmarkLineWriter(b *testing.B) {
	chunk := bytes.Repeat([]byte("0123456789 some output of a build tool\n"), 1000)
	w := sdk.NewLineWriter(sdk.Stdout, func(sdk.OutputLine) {})
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
}

// FuzzLineWriter: whatever the bytes and however they are split into
// writes, the lines rebuild the stream (a last unterminated line gets
// its newline) and no piece exceeds MaxLineBytes.
func FuzzLineWriter(f *testing.F) {
	f.Add([]byte("a\nb"), uint8(1))
	f.Add([]byte("\n\n\r\n\xff"), uint8(0))
	f.Add([]byte(strings.Repeat("x", 300)+"\ny"), uint8(7))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		var writes []string
		for rest := stream; len(rest) > 0; {
			n := min(int(chunk)+1, len(rest))
			writes, rest = append(writes, string(rest[:n])), rest[n:]
		}
		var rebuilt strings.Builder
		for _, p := range collect(writes) {
			if len(p.text) > sdk.MaxLineBytes {
				t.Fatalf("a piece of %d bytes", len(p.text))
			}
			rebuilt.WriteString(p.text)
			if !p.partial {
				rebuilt.WriteByte('\n')
			}
		}
		want := string(stream)
		if want != "" && !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if rebuilt.String() != want {
			t.Fatalf("lines rebuild %q, not %q", rebuilt.String(), want)
		}
	})
}

// usageParser reports, on Close, the usage it summed from the lines it saw:
// the way a CLI parser reports a cut stream's usage.
type usageParser struct{ lines int64 }

func (p *usageParser) Parse([]byte) []sdk.Event { p.lines++; return nil }
func (p *usageParser) Close() []sdk.Event {
	return []sdk.Event{{Type: sdk.EventUsage, Usage: &sdk.Usage{OutputTokens: p.lines}}}
}

func TestParseLinesClosesTheParserOnCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan []byte)
	var got []sdk.Event
	done := make(chan error)
	go func() { done <- sdk.ParseLines(ctx, lines, func(e sdk.Event) { got = append(got, e) }, &usageParser{}) }()
	lines <- []byte("a")
	lines <- []byte("b")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("ParseLines = %v, want context.Canceled", err)
	}
	if len(got) != 1 || got[0].Usage == nil || got[0].Usage.OutputTokens != 2 {
		t.Fatalf("events after cancellation = %+v, want the parser's usage of the 2 lines", got)
	}
}
