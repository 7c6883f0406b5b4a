// Command release publishes this checkout the way release tags would and
// checks what dependents get (docs/releasing.md, docs/adr/0020):
//
//	go run ./scripts/release check [-version V]   # the release rehearsal (make release-check)
//	go run ./scripts/release tidy [-w]             # go mod tidy of every module, as a dependent resolves it
//	go run ./scripts/release dist [-out DIR]       # release archives, SHA256SUMS, SBOM (make dist)
//	go run ./scripts/release prepare V             # the release commit: require the SDK at V
//	go run ./scripts/release proxy DIR V           # write the root module and the SDK at V into a file proxy
//	go run ./scripts/release surface               # count the SDK's exported names (docs/adr/0015)
//
// It runs from anywhere inside the repository.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "check":
		err = check(root, args)
	case "tidy":
		err = tidy(root, args)
	case "dist":
		err = dist(root, args)
	case "prepare":
		err = prepare(root, args)
	case "surface":
		err = surface(root, args)
	case "proxy":
		if len(args) != 2 {
			usage()
		}
		_, err = publish(root, args[0], args[1])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./scripts/release check|tidy|dist|prepare|proxy|surface … (see the package comment)")
	os.Exit(2)
}
