# anemone build. `make test` is what CI runs (.ci/run).
GO       ?= go
DARWIN   := GOOS=darwin GOARCH=arm64 CGO_ENABLED=0
FUZZTIME ?= 30s
BENCH    ?= .

.PHONY: test vet darwin unit race bench fuzz fmt demo mil

test: vet darwin unit race

vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(DARWIN) $(GO) vet ./...

darwin:
	$(DARWIN) $(GO) build ./...

# -short keeps long accuracy sweeps out of the default run; `make bench` has them.
unit:
	$(GO) test -short -count=1 ./...

race:
	$(GO) test -short -race -count=1 ./shim/...

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 60m ./...

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./lower/mil/
	$(GO) test -run '^$$' -fuzz '^FuzzReadBlob$$' -fuzztime $(FUZZTIME) ./lower/mil/

fmt:
	gofmt -w .

# The main job: Poisson 128² by CG on the device (the simulator here),
# refined to float64 accuracy; writes poisson2d.png.
demo:
	$(GO) run ./examples/poisson2d -out poisson2d.png
	$(GO) run ./examples/convdiff -pe 100 -out convdiff.png

# Prints a lowered program: what the engine (or the simulator) compiles.
mil:
	$(GO) run ./cmd/anemone mil matmul -m 64 -k 64 -n 64
