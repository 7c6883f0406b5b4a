package env

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestResolvePrecedence(t *testing.T) {
	t.Parallel()
	got, err := Resolve(Layers{
		Lookup:  lookupFrom(map[string]string{"A": "proc", "B": "proc", "TOKEN": "proc-token", "PATH": "/host/bin"}),
		DotEnv:  map[string]string{"A": "", "B": "dot", "C": "dot", "D": "dot"},
		Agent:   map[string]string{"C": "agent", "E": "agent"},
		Sandbox: map[string]string{"D": "sandbox", "F": "sandbox"},
		Run:     map[string]string{"E": "run", "F": "run", "G": "run"},
		Required: [][]string{
			{"TOKEN", "OTHER"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"A": "proc", "B": "dot", "C": "agent", "D": "sandbox", "E": "run", "F": "run", "G": "run",
		"TOKEN": "proc-token",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestProcessEnvNotDumped(t *testing.T) {
	t.Parallel()
	got, err := Resolve(Layers{Lookup: lookupFrom(map[string]string{"HOME": "/root", "PATH": "/bin"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("host env leaked: %v", Keys(got))
	}
}

func TestOverlapIsErrorListingKeys(t *testing.T) {
	t.Parallel()
	_, err := Resolve(Layers{
		Agent:   map[string]string{"Z": "secret-a", "A": "1", "X": "2"},
		Sandbox: map[string]string{"Z": "secret-b", "A": "3", "Y": "4"},
	})
	var oe *OverlapError
	if !errors.As(err, &oe) || !reflect.DeepEqual(oe.Keys, []string{"A", "Z"}) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatal("error leaks values")
	}
}

func TestRunEnvMayOverlapProviders(t *testing.T) {
	t.Parallel()
	got, err := Resolve(Layers{Agent: map[string]string{"K": "a"}, Run: map[string]string{"K": "r"}})
	if err != nil || got["K"] != "r" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestRequiredMissingNamesKeys(t *testing.T) {
	t.Parallel()
	_, err := Resolve(Layers{
		Lookup:   lookupFrom(map[string]string{"ANTHROPIC_API_KEY": ""}),
		Required: [][]string{{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}, {"GH_TOKEN"}},
		Run:      map[string]string{"GH_TOKEN": "x"},
	})
	var me *MissingError
	if !errors.As(err, &me) || len(me.Groups) != 1 || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if m, err := ReadFile(filepath.Join(dir, "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v %v", m, err)
	}
	p := filepath.Join(dir, ".env")
	os.WriteFile(p, []byte("# c\nA=1\nexport B=\"two\\nlines\"\nC='x y'\n\n"), 0o600)
	m, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two\nlines", "C": "x y"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %q", m)
	}
}

func TestCheckNamesTheKeyNeverTheValue(t *testing.T) {
	big := strings.Repeat("v", 300<<10)
	err := Check(map[string]string{"BAD KEY": "1", "1X": "2", "NUL": "se\x00cret", "BIG": big, "OK_1": "fine"})
	var inv *InvalidError
	if !errors.As(err, &inv) || len(inv.Problems) != 4 {
		t.Fatalf("got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{`"BAD KEY"`, `"1X"`, "NUL contains a NUL byte", "BIG is 307200 bytes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q missing from %s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") || strings.Contains(msg, "vvvv") {
		t.Errorf("a value leaked: %s", msg)
	}
	if _, err := Resolve(Layers{Lookup: lookupFrom(nil), Run: map[string]string{"1X": "v"}}); !errors.As(err, &inv) {
		t.Errorf("Resolve let an invalid key through: %v", err)
	}
	many := map[string]string{}
	for i := range 10 {
		many[fmt.Sprintf("K%d", i)] = strings.Repeat("v", 120<<10)
	}
	if err := Check(many); err == nil || !strings.Contains(err.Error(), "add up to") {
		t.Errorf("1.2 MiB of env: %v", err)
	}
}

// The limits are the kernel's: the longest variable Check accepts starts a
// real process, one byte more does not.
func TestCheckLimitIsWhatExecAccepts(t *testing.T) {
	value := strings.Repeat("v", MaxVar-len("K="))
	if err := Check(map[string]string{"K": value}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	cmd.Env = []string{"K=" + value}
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec with the longest accepted variable: %v", err)
	}
	if err := Check(map[string]string{"K": value + "v"}); err == nil {
		t.Fatal("one byte more accepted")
	}
	cmd = exec.Command("true")
	cmd.Env = []string{"K=" + value + "v"}
	if err := cmd.Run(); err == nil {
		t.Fatal("the kernel took a variable past MAX_ARG_STRLEN: the limit is wrong")
	}
}

func TestReadFileRefusesFIFOsDevicesAndHugeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, ".env")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.env")
	if err := os.WriteFile(big, []byte(strings.Repeat("A=b\n", MaxFileSize/4+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", big: "more than the limit of 1 MiB"} {
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
