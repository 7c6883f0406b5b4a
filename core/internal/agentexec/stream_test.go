package agentexec

import (
	"strings"
	"testing"
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
