# machined — common entry points. `make run` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
STATE_DIR ?= ./state
LISTEN ?= 127.0.0.1:50000

.PHONY: deps deps-system build run test test-unit test-cluster test-vm typecheck lint bench gen clean

# Debian packages the tests and local services need (containerd, etcd, disk tools, ...).
deps-system:
	./scripts/install-system-deps.sh

node_modules: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch node_modules

deps: node_modules

gen: deps
	npm run gen

build: deps
	npm run build

# Main job: machined in local mode, maintenance API on 127.0.0.1:50000, state in ./state.
run: build
	node dist/machined.mjs start --state-dir $(STATE_DIR) --listen $(LISTEN)

typecheck: deps
	npm run typecheck

lint: deps
	npm run lint:deps

# The whole test suite: unit/integration tests, whole nodes in sandboxes, then the VM end-to-end tests (QEMU under TCG, ~25 min).
# Root is needed for the daemon, namespace, disk and VM tests; without it they skip and say why.
test: test-unit test-cluster test-vm

# Everything but the VM boots (a few minutes).
test-unit: deps-system build
	npm run typecheck
	npm run lint:deps
	npm test

# Whole nodes in sandboxes on a lab bridge: Kubernetes on one node and its upgrade, etcd join across three
# control planes (test/sandbox, test/multinode; ~15 min). Needs the images in the loopback registry (make registry).
test-cluster: deps-system build
	npm run test:cluster

# Builds the amd64/arm64 images and drives them in QEMU (test/vm).
test-vm: deps-system build
	./scripts/install-system-deps.sh image/packages.txt
	npm run test:vm

bench: build
	npm run bench

clean:
	rm -rf dist build

-include Makefile.image
