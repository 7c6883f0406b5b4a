package terminal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Ask returns a function that asks the user for a prompt argument's value
// at the terminal (prompt.Source.Ask): it prints the question on out and
// reads one line from in, which must be a terminal.
func Ask(in *os.File, out io.Writer) func(key string) (string, error) {
	return func(key string) (string, error) {
		if !term.IsTerminal(int(in.Fd())) {
			return "", errors.New("stdin is not a terminal to ask on; set it in prompt_args")
		}
		if _, err := fmt.Fprintf(out, "Value for {{%s}}: ", key); err != nil {
			return "", err
		}
		return readLine(in)
	}
}

// readLine reads up to a newline one byte at a time, so that nothing typed
// after it is consumed.
func readLine(in io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := in.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return strings.TrimSuffix(b.String(), "\r"), nil
			}
			b.WriteByte(buf[0])
		}
		if err == io.EOF {
			return "", errors.New("the terminal closed before a value was entered")
		}
		if err != nil {
			return "", err
		}
	}
}
