package agentexec

import (
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

func TestRing(t *testing.T) {
	t.Parallel()
	r := NewRing(8)
	r.WriteString("abc")
	if r.String() != "abc" || r.Len() != 3 {
		t.Fatalf("%q %d", r.String(), r.Len())
	}
	r.WriteString("defgh")
	if r.String() != "abcdefgh" || r.Len() != 8 {
		t.Fatalf("%q", r.String())
	}
	r.WriteString("ij")
	if r.String() != "cdefghij" {
		t.Fatalf("%q", r.String())
	}
	r.WriteString(strings.Repeat("x", 20) + "12345678")
	if r.String() != "12345678" {
		t.Fatalf("%q", r.String())
	}
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	sigs := []string{"<done/>", "<abort/>"}
	for _, c := range []struct {
		name  string
		feed  []string
		want  string
		first int // the feed index at which a signal is first seen; -1 for never
	}{
		{"none", []string{"nothing", "here"}, "", -1},
		{"whole", []string{"ok <done/>"}, "<done/>", 0},
		{"split", []string{"ok <do", "n", "e/> bye"}, "<done/>", 2},
		{"second listed", []string{"<abort/>"}, "<abort/>", 0},
		{"listed order wins", []string{"<abort/>", "later <done/>"}, "<done/>", 0},
		{"both at once", []string{"<abort/><done/>"}, "<done/>", 0},
		{"split over a long text", []string{"<ab", strings.Repeat("x", 100), "<abort", "/>"}, "<abort/>", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMatcher(sigs)
			first := -1
			for i, s := range c.feed {
				if m.feed(s) && first < 0 {
					first = i
				}
			}
			if m.matched() != c.want || first != c.first {
				t.Errorf("matched %q first at %d, want %q at %d", m.matched(), first, c.want, c.first)
			}
			if len(m.window) > m.keep {
				t.Errorf("window holds %d bytes, more than %d", len(m.window), m.keep)
			}
		})
	}
}

// TestJoiner: pieces of a line come back as the line, cut at max (and
// said to be) whether the line came whole or in pieces.
func TestJoiner(t *testing.T) {
	t.Parallel()
	j := joiner{max: 5}
	for _, c := range []struct {
		pieces []string // all but the last Partial
		want   string
		cut    bool
	}{
		{[]string{"abc"}, "abc", false},
		{[]string{"ab", "cdefg"}, "abcde", true},
		{[]string{""}, "", false},
		{[]string{"", ""}, "", false},
		{[]string{"1234567"}, "12345", true},
		{[]string{"123456", "7", "8"}, "12345", true},
		{[]string{"12345"}, "12345", false},
		{[]string{"", "abc"}, "abc", false},
	} {
		var line []byte
		var cut bool
		for i, p := range c.pieces {
			l, truncated, ok := j.add(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(p), Partial: i < len(c.pieces)-1})
			if ok != (i == len(c.pieces)-1) {
				t.Fatalf("%q: piece %d: ok %v", c.pieces, i, ok)
			}
			line, cut = l, truncated
		}
		if string(line) != c.want || cut != c.cut {
			t.Errorf("%q: got %q (truncated %v), want %q (%v)", c.pieces, line, cut, c.want, c.cut)
		}
	}
}
