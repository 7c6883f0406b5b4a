package main

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, newProvider(), sandboxtest.Options{})
}
