# gcscope — `make run` boots it on its embedded control plane, `make test` runs the tests.

GO        ?= go
BIN       ?= bin/gcscope
ARGS      ?=
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The embedded kube-apiserver reports this version (kubectl version reads it).
KUBE_VERSION := v1.37.1
LDFLAGS := -X main.version=$(VERSION) \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37
TEST_TIMEOUT ?= 45m

.PHONY: run build test fuzz generate bench lint clean

run: build ## build and start gcscope on its embedded control plane (ARGS="..." adds flags)
	./$(BIN) $(ARGS)

build: ## build bin/gcscope
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gcscope

test: ## run every test (the control-plane tests boot a real etcd and kube-apiserver), then the fuzzers briefly
	GCSCOPE_LDFLAGS='$(LDFLAGS)' $(GO) test -timeout $(TEST_TIMEOUT) -count=1 ./...
	$(MAKE) fuzz FUZZTIME=200000x

# FUZZTIME is a duration or a count of inputs (Nx). make test uses a count: a duration
# can end with a spurious "context deadline exceeded" when the machine is loaded.
FUZZTIME ?= 1m
fuzz: ## run each fuzz target for FUZZTIME
	$(GO) test -run '^$$' -fuzz '^FuzzClientFrame$$' -fuzztime $(FUZZTIME) ./server/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzDeleteRequest$$' -fuzztime $(FUZZTIME) ./server/wire/

generate: ## regenerate committed generated code
	$(GO) generate ./...

bench: ## run the benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: ## go vet and a gofmt check
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin
