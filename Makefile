# SPDX-License-Identifier: Apache-2.0
# The two set-up commands (README): `make demo` and `make test`. Both bootstrap the machine first.
# Other targets: build, check, release, image, install, bench, clean.

SHELL := /bin/bash
JOBS ?= $(shell nproc)
CMAKE ?= cmake

.PHONY: all demo test build release image install bench clean bootstrap testbin fuzz check \
	check-layering check-format check-size check-thread-safety check-tidy

PREFIX ?= /usr/local

# ccache hits across clones: paths under the checkout are hashed relative to it, and the build
# directory is not hashed, so a fresh clone elsewhere (CI's) reuses what any earlier clone built.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= true

all: build

bootstrap:
	@scripts/bootstrap

# Release build of the gpusched binary, then the simulator on the built-in example.
demo: bootstrap
	$(CMAKE) --preset release >/dev/null
	$(CMAKE) --build --preset release -j $(JOBS) --target gpusched
	build/release/cmd/gpusched/gpusched simulate

release: bootstrap
	$(CMAKE) --preset release >/dev/null
	$(CMAKE) --build --preset release -j $(JOBS)

# The OCI image without a Docker daemon (buildah): build/image/gpusched.oci.tar, its digest and
# size printed. See scripts/build-image.
image: bootstrap
	scripts/build-image

# gpusched and the kubectl plugin (kubectl-gpusched, a symlink) into $(PREFIX)/bin; DESTDIR works.
install: bootstrap
	$(CMAKE) --preset release >/dev/null
	$(CMAKE) --build --preset release -j $(JOBS) --target gpusched
	$(CMAKE) --install build/release --prefix $(PREFIX) --component gpusched

# The build CI tests: clang++, ASan+UBSan, -Wthread-safety -Werror, -O0; tests, bench/, fuzz/.
build: bootstrap
	$(CMAKE) --preset asan-ubsan >/dev/null
	$(CMAKE) --build --preset asan-ubsan -j $(JOBS)

testbin:
	@scripts/testbin >/dev/null
	@scripts/testbin --kueue >/dev/null

# The checks (`make check`; the thread-safety check builds asan-ubsan, tidy runs beside the later
# phases), the test control plane, a bounded libFuzzer run of every parser target, then every
# ctest test; scripts/test times each phase and prints the table at the end.
test:
	JOBS=$(JOBS) scripts/test

fuzz: bootstrap
	scripts/fuzz

# What the style guide says machines check (docs/testing.md, "Checks"): the layering table, the
# size limits, clang-format, Clang's thread-safety analysis (the asan-ubsan build, -Werror), then
# clang-tidy over that build's compile_commands.json. The quick ones first; each prints what failed.
# scripts/check runs them all, even after a failure, and prints each one's result and time.
check: bootstrap
	JOBS=$(JOBS) scripts/check

check-layering check-size check-format check-thread-safety check-tidy: bootstrap
	JOBS=$(JOBS) scripts/$@

bench: bootstrap
	$(CMAKE) --preset bench >/dev/null
	$(CMAKE) --build --preset bench -j $(JOBS)

clean:
	rm -rf build
