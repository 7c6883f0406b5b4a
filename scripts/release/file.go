package main

import (
	"io"
	"os"
)

// copyTo writes what r holds to the file dst.
func copyTo(dst string, r io.Reader) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
