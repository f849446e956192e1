# SPDX-License-Identifier: Apache-2.0
# The two set-up commands (README): `make demo` and `make test`. Both bootstrap the machine first.
# Other targets: build, release, image, install, bench, clean.

SHELL := /bin/bash
JOBS ?= $(shell nproc)
CMAKE ?= cmake

.PHONY: all demo test build release image install bench clean bootstrap testbin fuzz

PREFIX ?= /usr/local

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

# What CI runs: the ASan+UBSan build with -Werror, the test control plane binaries (cached outside
# the checkout), then every test (labels: unit, e2e).
build: bootstrap
	$(CMAKE) --preset asan-ubsan >/dev/null
	$(CMAKE) --build --preset asan-ubsan -j $(JOBS)

testbin:
	@scripts/testbin >/dev/null

# A bounded libFuzzer run of every parser target (clang), then every ctest test.
test: build testbin fuzz
	GPUSCHED_TESTBIN_DIR="$$(scripts/testbin | tail -n 1)" \
	  ctest --preset asan-ubsan -j $(JOBS)

fuzz: bootstrap
	scripts/fuzz

bench: bootstrap
	$(CMAKE) --preset bench >/dev/null
	$(CMAKE) --build --preset bench -j $(JOBS)

clean:
	rm -rf build
