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
# Test binaries are linked without symbol table and DWARF: most embed a control plane, and
# the link, redone for every run, takes a quarter less (a panic's trace does not need them).
TEST_LDFLAGS ?= -s -w
# Test binaries run 1.5 per core, not go test's one: most wait on their control plane far
# more than they compute (at one per core, two cores were 1.2 busy over a whole run).
TEST_P ?= $(shell n=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2); echo $$(( n * 3 / 2 )))

.PHONY: run build plugin dist dist-archives test browser fuzz generate manifests bench difftest chaostest predictcheck lint typecheck clean

run: build ## build and start gcscope on its embedded control plane (ARGS="..." adds flags)
	./$(BIN) $(ARGS)

build: ## build bin/gcscope
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gcscope

plugin: ## build bin/kubectl-gcscope, the kubectl plugin (no embedded control plane); put it on PATH for `kubectl gcscope`
	$(GO) build -ldflags '-X main.version=$(VERSION)' -o bin/kubectl-gcscope ./cmd/kubectl-gcscope

# A release of the plugin, for krew and for downloading: kubectl-gcscope for each of
# DIST_PLATFORMS, statically linked (CGO off) with -trimpath, packed with the LICENSE into
# $(DIST)/kubectl-gcscope_VERSION_GOOS_GOARCH.tar.gz; then $(DIST)/SHA256SUMS and the krew
# manifest $(DIST)/gcscope.yaml, naming each archive's sha256 and its URL under RELEASE_URL
# (hack/krew writes them). VERSION must be a semantic version: cut a release from a tag
# (git tag v0.2.0). docs/install.md says how a release is cut.
DIST           ?= dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
REPO_URL       ?= https://github.com/gcscope/gcscope
RELEASE_URL    ?= $(REPO_URL)/releases/download/$(VERSION)
# Every file in the archives is dated the commit's time: a commit's archives are reproducible.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
KREW_ARGS = -version '$(VERSION)' -url '$(RELEASE_URL)'

dist: dist-archives ## cross-build kubectl-gcscope for DIST_PLATFORMS into dist/ (a .tar.gz each, SHA256SUMS, the krew manifest gcscope.yaml), then install each archive with krew to check it
	GCSCOPE_DIST='$(abspath $(DIST))' $(GO) test -count=1 -run '^TestKrewInstallsTheArchives$$' ./hack/krew/

dist-archives: ## make dist without krew's check: the binaries, the archives, SHA256SUMS and gcscope.yaml
	$(GO) run ./hack/krew -check $(KREW_ARGS) $(DIST_PLATFORMS)
	rm -rf '$(DIST)/build' '$(DIST)'/kubectl-gcscope_*.tar.gz '$(DIST)/SHA256SUMS' '$(DIST)/gcscope.yaml'
	@for p in $(DIST_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "build kubectl-gcscope $(VERSION) for $$os/$$arch"; \
		mkdir -p '$(DIST)/build/'$${os}_$${arch} || exit 1; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' \
			-o '$(DIST)/build/'$${os}_$${arch}/kubectl-gcscope ./cmd/kubectl-gcscope || exit 1; \
	done
	$(GO) run ./hack/krew $(KREW_ARGS) -builds '$(DIST)/build' -out '$(DIST)' -mtime '$(SOURCE_DATE_EPOCH)' \
		$(addprefix -file ,$(wildcard LICENSE)) $(DIST_PLATFORMS)

test: browser ## run every test (the control-plane tests boot a real etcd and kube-apiserver), then the fuzzers briefly
	GCSCOPE_LDFLAGS='$(LDFLAGS)' $(GO) test -timeout $(TEST_TIMEOUT) -count=1 -p $(TEST_P) -ldflags '$(TEST_LDFLAGS)' -skip '^TestPredictionsComeTrue$$' ./...
	$(MAKE) predictcheck N=10
	$(MAKE) fuzz FUZZTIME=200000x

# FUZZTIME is a duration or a count of inputs (Nx). make test uses a count: a duration
# can end with a spurious "context deadline exceeded" when the machine is loaded.
FUZZTIME ?= 1m
fuzz: ## run each fuzz target for FUZZTIME
	$(GO) test -run '^$$' -fuzz '^FuzzClientFrame$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./server/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzDeleteRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./server/wire/

# The differential test: gcscope's engine and kube-controller-manager's collector, each on
# its own embedded apiserver, driven through N seeded scenarios and compared after every
# step (make test runs a fixed set of 6 seeds).
N ?= 1000
difftest: ## compare gcscope's engine with the upstream collector over N seeded scenarios
	GCSCOPE_DIFFTEST_SEEDS=$(N) $(GO) test -count=1 -timeout 120m -run '^TestSameOutcomeAsUpstream$$' -v ./internal/difftest/

# The fault runs: gcscope's engine under injected faults (409, 429, 500, timeouts, resets,
# cut watches) and restarted at random points, against the fault-free engine, over N seeds
# (make test runs a fixed set of 8).
chaostest: ## compare gcscope's engine under faults and restarts with the fault-free engine over N seeds
	GCSCOPE_CHAOS_SEEDS=$(N) $(GO) test -count=1 -timeout 120m -run '^TestFaultsChangeNoOutcome$$' -v ./internal/difftest/

# The prediction check: on each of N seeded clusters (the differential test's scenarios, on
# an embedded apiserver with gcscope's engine alone), the engine predicts a random delete
# (one object or a set; Background, Foreground or Orphan), the delete is made, and what the
# cluster did must be what was predicted; and on each seed's StatefulSets, claims and hostPath
# volumes, on a control plane running kube-controller-manager's controllers, the same for the
# volumes' fates, what is left behind and what comes back (make test runs seeds 1 to 10). It prints
# "predictions: N seeds, D deletes, M mismatched"; GCSCOPE_PREDICTCHECK_SEED=S replays one.
predictcheck: ## check gcscope's delete predictions against the cluster's outcomes over N seeded clusters
	GCSCOPE_PREDICTCHECK_SEEDS=$(N) $(GO) test -count=1 -timeout 120m -run '^TestPredictionsComeTrue$$' -v ./internal/difftest/

generate: ## regenerate committed generated code (templ, and deploy/ from the Helm chart)
	$(GO) generate ./...

# The plain manifests in deploy/, rendered from charts/gcscope by helm pinned in
# deploy/render.go and built by the Go toolchain (go run pkg@version; no downloaded binary).
manifests: ## render deploy/*.yaml from charts/gcscope
	$(GO) generate ./deploy

# The browser tests and the UI render benchmark drive headless Chromium. GCSCOPE_CHROMIUM
# names another binary; otherwise chromium (or chromium-browser) on PATH is used, and
# Debian's chromium package is installed when neither is there.
browser: ## install Debian's chromium for the browser tests, unless a browser is there already
	@if [ -n "$$GCSCOPE_CHROMIUM" ]; then \
		command -v "$$GCSCOPE_CHROMIUM" >/dev/null 2>&1 || { echo "browser: GCSCOPE_CHROMIUM=$$GCSCOPE_CHROMIUM is not an executable"; exit 1; }; \
	elif command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		:; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "browser: no chromium on PATH and no apt-get to install it: install Chromium or set GCSCOPE_CHROMIUM (the browser tests skip without it, and fail under CI)"; \
	else \
		sudo=; \
		if [ "$$(id -u)" != 0 ]; then \
			command -v sudo >/dev/null 2>&1 || { echo "browser: installing chromium needs root or sudo"; exit 1; }; \
			sudo=sudo; \
		fi; \
		echo "browser: installing Debian's chromium for the browser tests"; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update || exit 1; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium || exit 1; \
		command -v chromium >/dev/null 2>&1 || { echo "browser: installed, but chromium is not on PATH"; exit 1; }; \
	fi

# The UI benchmarks in headless Chromium (web/: the render benchmark, and the snapshot over
# loopback and slower links) load the page once per case: they run with -benchtime 1x,
# the other benchmarks with go test's defaults.
RENDER_BENCH := ^BenchmarkUI(Render|Snapshot|FirstFrame)$$
# The side-by-side benchmarks with the upstream collector (internal/difftest: cascades, a
# 150k-Pod cluster, and a busy cluster's churn) run once each (-benchtime 1x): one run takes minutes.
SIDE_BENCH := ^Benchmark(Cascades|Scale|Churn)$$
bench: browser ## run the benchmarks, the side-by-side ones with the upstream collector, then the UI render benchmark in headless Chromium
	$(GO) test -run '^$$' -bench . -skip '$(RENDER_BENCH)|$(SIDE_BENCH)' -benchmem ./...
	$(GO) test -run '^$$' -bench '$(SIDE_BENCH)' -benchtime 1x -timeout 90m ./internal/difftest/
	$(GO) test -run '^$$' -bench '$(RENDER_BENCH)' -benchtime 1x -timeout 30m ./web/

lint: typecheck ## go vet, a gofmt check, and the type check of the UI's JavaScript
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The type check of the UI's modules (static/src, each `// @ts-check`): TypeScript's compiler,
# pinned in static/package.json and static/package-lock.json, checks them as
# static/tsconfig.json says (strict) and emits nothing; esbuild alone builds app.js. npm ci
# installs it into static/node_modules (git-ignored) whenever the lock file changed; Debian's
# nodejs and npm are installed first when node or npm is missing, as `browser` does for chromium.
TSC_STAMP := static/node_modules/.package-lock.json
typecheck: $(TSC_STAMP) ## type-check the UI's JavaScript (static/src) with TypeScript's compiler (tsc --noEmit, checkJs)
	cd static && node_modules/.bin/tsc -p tsconfig.json

$(TSC_STAMP): static/package.json static/package-lock.json
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		command -v apt-get >/dev/null 2>&1 || { echo "typecheck: no node or npm on PATH and no apt-get to install them: install Node.js (18 or later) and npm"; exit 1; }; \
		sudo=; \
		if [ "$$(id -u)" != 0 ]; then \
			command -v sudo >/dev/null 2>&1 || { echo "typecheck: installing nodejs and npm needs root or sudo"; exit 1; }; \
			sudo=sudo; \
		fi; \
		echo "typecheck: installing Debian's nodejs and npm for the type check"; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update || exit 1; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm || exit 1; \
	fi
	cd static && npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf bin $(DIST)
