# Two entry points for a fresh machine: `make demo` and `make test`. Each installs what is
# missing (scripts/setup.sh does nothing when all is present), builds, then runs.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all setup configure build cli demo test unit gpu clean

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Only the command-line tool, without the test binaries: what the demo needs, built sooner.
cli: configure
	@cmake --build $(BUILD) -j $(JOBS) --target cudal1

# Evaluates the bundled example candidates against their tasks on this machine's device, then
# runs `cudal1 optimize` with the built-in policy on a few tasks (scripts/demo.sh).
demo: cli
	@bash scripts/demo.sh $(BUILD)/cudal1

# Every CPU test. GPU tests carry the label `gpu` and are left to scripts/gpu_check.sh.
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE gpu --timeout 900

unit: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

clean:
	rm -rf $(BUILD)
