package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// platforms are the release archives' GOOS/GOARCH.
var platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// dist builds sanddune and its plugin binaries for every platform and
// writes, into out, one .tar.gz per platform, a CycloneDX SBOM and
// SHA256SUMS naming them. Everything is a function of the commit: builds
// are -trimpath without VCS stamping, archive entries carry the commit
// time (or SOURCE_DATE_EPOCH), root owner and sorted names, and the SBOM
// has no serial number and that time as its timestamp.
func dist(root string, args []string) error {
	fs := flag.NewFlagSet("dist", flag.ExitOnError)
	out := fs.String("out", filepath.Join(root, "dist"), "where the archives go")
	version := fs.String("version", "", "the version to stamp (default: git describe --tags --always --dirty)")
	fs.Parse(args)
	if *version == "" {
		v, err := gitOut(root, "describe", "--tags", "--always", "--dirty")
		if err != nil {
			return err
		}
		*version = v
	}
	mtime := commitTime(root)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%s: %v", s, err)
		}
		mtime = time.Unix(sec, 0)
	}
	old, _ := filepath.Glob(filepath.Join(*out, "sanddune_*"))
	for _, f := range append(old, filepath.Join(*out, "SHA256SUMS")) {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	build, err := os.MkdirTemp("", "sanddune-dist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(build)
	var names []string
	var bins []string
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		dir := filepath.Join(build, goos+"_"+goarch)
		env := append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		fmt.Printf("dist: building %s\n", p)
		if _, err := run(root, env, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+*version, "-o", dir+"/", "./cmd/..."); err != nil {
			return err
		}
		name := fmt.Sprintf("sanddune_%s_%s_%s.tar.gz", *version, goos, goarch)
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			return err
		}
		bins = append(bins, files...)
		if err := writeArchive(filepath.Join(*out, name), strings.TrimSuffix(name, ".tar.gz"), files, mtime); err != nil {
			return err
		}
		names = append(names, name)
	}
	sbom := fmt.Sprintf("sanddune_%s.cdx.json", *version)
	if err := writeSBOM(filepath.Join(*out, sbom), *version, bins, mtime); err != nil {
		return err
	}
	names = append(names, sbom)
	var sums bytes.Buffer
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(*out, n))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	if err := os.WriteFile(filepath.Join(*out, "SHA256SUMS"), sums.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("dist: wrote %s:\n%s", *out, sums.String())
	return nil
}

// writeArchive writes files (sorted by name) into a gzipped tar under the
// directory top, every entry owned by root and dated mtime.
func writeArchive(path, top string, files []string, mtime time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	files = slices.Sorted(slices.Values(files))
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	hdr := func(name string, mode int64, typ byte, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime, Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(hdr(top+"/", 0o755, tar.TypeDir, 0)); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(hdr(top+"/"+filepath.Base(f), 0o755, tar.TypeReg, int64(len(data)))); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeSBOM writes a CycloneDX JSON SBOM of the modules linked into bins
// (from their build info): sanddune at version, and every dependency with
// its version and go.sum hash.
func writeSBOM(path, version string, bins []string, t time.Time) error {
	deps := map[string]*cdx.Component{}
	for _, b := range bins {
		info, err := buildinfo.ReadFile(b)
		if err != nil {
			return fmt.Errorf("%s: %v", b, err)
		}
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			if d.Path == sdkPath {
				continue // part of sanddune's own release, at its version
			}
			purl := "pkg:golang/" + d.Path + "@" + d.Version
			c := &cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: d.Path, Version: d.Version, PackageURL: purl}
			if d.Sum != "" {
				c.Properties = &[]cdx.Property{{Name: "golang:go.sum", Value: d.Sum}}
			}
			deps[purl] = c
		}
	}
	refs := slices.Sorted(func(yield func(string) bool) {
		for r := range deps {
			if !yield(r) {
				return
			}
		}
	})
	comps := make([]cdx.Component, 0, len(refs))
	for _, r := range refs {
		comps = append(comps, *deps[r])
	}
	self := "pkg:golang/" + rootPath + "@" + version
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: t.UTC().Format(time.RFC3339),
		Component: &cdx.Component{BOMRef: self, Type: cdx.ComponentTypeApplication, Name: "sanddune", Version: version, PackageURL: self},
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: self, Dependencies: &refs}}
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
