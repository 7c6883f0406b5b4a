# sanddune — build, install and test. `make help` lists the targets.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
# Stripped, without build paths, version stamped (`sanddune version`);
# static (CGO_ENABLED=0, as the release builds), so the egress enforcer
# (sanddune-egress) runs in any sandbox image.
BUILDFLAGS := -trimpath -ldflags "-s -w -X main.version=$(VERSION)"
# The Go modules, as go.work lists them: sanddune itself, the plugin SDK,
# the examples (built against the SDK as a third party would, ADR 0015) and
# the release tool. `go test ./...` does not descend into a nested module,
# so each is run on its own.
MODULES := . sdk examples scripts/release
# each runs $(1) in every module, and fails if it failed in any.
each = status=0; for m in $(MODULES); do echo "== $$m: $(1)"; (cd $$m && $(1)) || status=1; done; exit $$status

.PHONY: help install build test test-unit cross release-check dist dist-check proto agents-compat agents-e2e vercel-compat bench e2e-k8s chaos fuzz soak

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

install: ## install sanddune, its kubernetes plugin and egress enforcer into $(go env GOPATH)/bin (and bubblewrap, as root, when missing)
	@bash scripts/install.sh
	CGO_ENABLED=0 $(GO) install $(BUILDFLAGS) ./cmd/...
	@dir=$$($(GO) env GOBIN); dir=$${dir:-$$($(GO) env GOPATH)/bin}; echo "installed sanddune and its plugins in $$dir"; \
	if [ -e "$$dir/sanddune-plugin-builtins" ]; then rm -f "$$dir/sanddune-plugin-builtins" && echo "removed $$dir/sanddune-plugin-builtins (an older install's: sanddune serves its built-ins itself now)"; fi; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on your PATH: add it (export PATH=\"$$dir:\$$PATH\") to run sanddune";; esac

build: ## build ./bin/sanddune, its kubernetes plugin and egress enforcer
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o bin/ ./cmd/...

test: ## set up Docker/Podman/bubblewrap (as root) and run every test
	@if [ "$$(id -u)" = 0 ]; then bash scripts/ci-setup.sh; \
	else echo "make test: not root, so Docker/Podman/bubblewrap are not set up here; their tests skip loudly"; fi
	@$(call each,$(GO) test -timeout 30m -p 4 -parallel 4 ./...)

test-unit: ## run the tests without setting anything up (engine tests skip loudly)
	@$(call each,$(GO) test ./...)

cross: ## check that everything builds for macOS (darwin/arm64, darwin/amd64)
	@$(call each,GOOS=darwin GOARCH=arm64 $(GO) build ./... && GOOS=darwin GOARCH=amd64 $(GO) build ./...)

release-check: ## publish this checkout at a test version into a file proxy and install, import and build against it as dependents do; check go mod tidy
	$(GO) run ./scripts/release tidy
	$(GO) run ./scripts/release check

dist: ## release archives for linux and darwin (amd64, arm64), SHA256SUMS and an SBOM in dist/
	$(GO) run ./scripts/release dist -version "$(VERSION)"

dist-check: ## build dist twice (the second with an empty build cache) and check both are byte for byte the same
	@bash scripts/dist-check.sh "$(VERSION)"

proto: ## regenerate the plugin protocol's Go code
	@bash scripts/genproto.sh

.PHONY: check
check: ## static checks: gofmt, go vet, staticcheck, generated protocol code up to date
	@bash scripts/check.sh

agents-compat: ## check built agent command lines against the real CLIs (npm)
	@bash scripts/agents-compat.sh

agents-e2e: ## run the real agent CLIs (npm) through sanddune in bubblewrap against scripted model servers
	@bash scripts/agents-e2e.sh

vercel-compat: ## drive the fake Vercel API with the official @vercel/sandbox SDK (npm)
	@bash scripts/vercel-compat.sh

bench: ## run the benchmarks in bench/
	$(GO) test -run '^$$' -bench . -benchtime 20x ./core/...

fuzz: ## run every go test -fuzz target for FUZZTIME each (default 1m), one at a time
	@FUZZTIME=$(or $(FUZZTIME),1m) bash scripts/fuzz.sh

chaos: ## interrupt 60 real runs (docker, bubblewrap, local) at random moments; check nothing is lost or leaked
	@bash scripts/chaos.sh $(TRIALS)

soak: ## run every test ROUNDS times in a row (default 3) while a loop of real docker runs shares the daemon
	@bash scripts/soak.sh $(ROUNDS)

e2e-k8s: ## start a real single-node Kubernetes (root; binaries cached) and run the kubernetes e2e suite
	@bash scripts/e2e-k8s.sh
