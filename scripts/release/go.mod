module github.com/missingstudio/sanddune/scripts/release

go 1.26.0

require (
	github.com/CycloneDX/cyclonedx-go v0.12.0
	golang.org/x/mod v0.41.0
)
