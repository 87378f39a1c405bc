# anemone build. `make test` is what CI runs (.ci/run).
GO       ?= go
DARWIN   := GOOS=darwin GOARCH=arm64 CGO_ENABLED=0
FUZZTIME ?= 30s
BENCH    ?= .

QEMU     ?= qemu-aarch64-static
# Packages whose numerics run under arm64 emulation: fp16 rounding, the
# simulator's kernels and the limb splitting must not change when the
# compiler fuses multiply-adds. (The solvers above them build on these and
# are left out: under emulation they alone would take minutes.)
ARM64PKG := ./fp16 ./dataflow ./lower/... ./shim/... ./precision

.PHONY: test vet darwin unit race arm64 bench fuzz fmt demo mil

test: vet darwin unit race arm64

vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	@! grep -rnE 'shared/docs|ANE_FACTS|MIL_OPS|NUMERICS_NOTES|ANE_CALLS|DESIGN\.md' --include='*.go' --include='*.md' --exclude=caps_test.go . || { echo "the repository must not point outside itself (cite docs/ instead)"; exit 1; }
	$(GO) vet ./...
	$(DARWIN) $(GO) vet ./...

darwin:
	$(DARWIN) $(GO) build ./...

# -short keeps long accuracy sweeps out of the default run; `make bench` has them.
unit:
	$(GO) test -short -count=1 ./...

race:
	$(GO) test -short -race -count=1 ./shim/...

# The tests of the numeric core, compiled for arm64 (the ANE's hosts) and
# run under qemu user emulation: arm64 fuses a·b+c into FMA instructions,
# which once broke fp16 rounding. Skipped with a notice where qemu is absent
# (.ci/run installs it).
arm64:
	@if command -v $(QEMU) >/dev/null 2>&1; then \
		echo "GOARCH=arm64 go test -exec $(QEMU) $(ARM64PKG)"; \
		GOARCH=arm64 $(GO) test -short -count=1 -exec $(QEMU) $(ARM64PKG); \
	else echo "arm64: $(QEMU) not found, skipping (apt-get install qemu-user-static)"; fi

# One package at a time (-p 1): the BenchmarkEndToEnd ones time the device
# path against its CPU baseline and fail where docs/RESULTS.md's row
# disagrees, which another package's benchmark running beside them skews.
bench:
	$(GO) test -p 1 -run '^$$' -bench '$(BENCH)' -benchmem -timeout 120m ./...
	$(MAKE) mnist

# MNIST on the default device, the figures of docs/RESULTS.md asserted:
# MLP 784-512-10 (Adam, 5 epochs, 2,340 steps) beside its float64 twin, the
# plain-fp16-update ablation, and the CNN. On the simulator they take about
# an hour together: not part of `make test`.
.PHONY: mnist
mnist:
	ANEMONE_LONG=1 $(GO) test -count=1 -v -timeout 150m -run 'TestFull' ./examples/mnist/

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./lower/mil/
	$(GO) test -run '^$$' -fuzz '^FuzzReadBlob$$' -fuzztime $(FUZZTIME) ./lower/mil/
	$(GO) test -run '^$$' -fuzz '^FuzzReadSafetensors$$' -fuzztime $(FUZZTIME) ./nn/

fmt:
	gofmt -w .

# The main job: Poisson 128² by CG on the device (the simulator here),
# refined to float64 accuracy; writes poisson2d.png.
demo:
	$(GO) run ./examples/poisson2d -out poisson2d.png
	$(GO) run ./examples/convdiff -pe 100 -out convdiff.png
	$(GO) run ./examples/heat2d -out heat2d.png

# Prints a lowered program: what the engine (or the simulator) compiles.
mil:
	$(GO) run ./cmd/anemone mil matmul -m 64 -k 64 -n 64
