// Command vercelfaked serves the fake Vercel Sandbox API (package
// vercelfake) on a local port, for clients outside Go tests such as the
// official @vercel/sandbox SDK (scripts/vercel-compat.sh). It prints the
// base URL on stdout and serves until stdin closes or it is signalled.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/missingstudio/sanddune/plugins/vercel/vercelfake"
)

func main() {
	token := flag.String("token", "", "the bearer token to accept (default any)")
	team := flag.String("team", "", "the only teamId to accept (default any)")
	flag.Parse()
	srv, err := vercelfake.New(vercelfake.Options{Token: *token, TeamID: *team})
	if err != nil {
		fmt.Fprintln(os.Stderr, "vercelfaked:", err)
		os.Exit(1)
	}
	defer srv.Close()
	fmt.Println(srv.URL)
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
}
