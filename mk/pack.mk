# `make deb` and `make image`: a Debian package and an OCI image archive per
# architecture (PACK_ARCHES), from the static binaries of make build,
# written into dist/ by tools/pack with libraries (goreleaser's nfpm,
# go-containerregistry): no dpkg-buildpackage, no container daemon.
# docs/install.md says how to install and load them.
PACK_ARCHES ?= amd64 arm64
DIST ?= dist
PACK_TOOL := .cache/pack
# The packages' file times: the commit's (reproducible, and no 1970 dates).
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)

.PHONY: deb image pack-bins test-pack

# tools/pack is its own module: its packagers stay out of rtscope's go.mod.
$(PACK_TOOL): $(wildcard tools/pack/*.go tools/pack/go.mod tools/pack/go.sum)
	@mkdir -p $(dir $@)
	GOARCH=$(HOSTARCH) $(GO) build -C tools/pack -o $(CURDIR)/$@ .

# Each architecture's binary (./rtscope here, ./rtscope-ARCH otherwise),
# and the host's for the completion scripts.
pack-bins: build
	@for a in $(PACK_ARCHES); do [ "$$a" = "$(HOSTARCH)" ] || $(MAKE) --no-print-directory build GOARCH=$$a || exit 1; done

pack-bin = $(if $(filter $(HOSTARCH),$(1)),rtscope,rtscope-$(1))

deb: pack-bins $(PACK_TOOL)
	@for a in $(PACK_ARCHES); do \
		$(PACK_TOOL) deb -root . -arch $$a -bin $$( [ "$$a" = "$(HOSTARCH)" ] && echo rtscope || echo rtscope-$$a ) \
			-host-bin ./rtscope -version $(VERSION) -out $(DIST) || exit 1; done

image: pack-bins $(PACK_TOOL)
	@for a in $(PACK_ARCHES); do \
		$(PACK_TOOL) image -root . -arch $$a -bin $$( [ "$$a" = "$(HOSTARCH)" ] && echo rtscope || echo rtscope-$$a ) \
			-version $(VERSION) -out $(DIST)/rtscope-oci-$$a.tar || exit 1; done

# The packaging tests (tools/pack: the .deb through dpkg-deb, an install
# and purge in an empty root, lintian, the copyright file, the systemd unit
# through systemd-analyze verify and its ExecStart run as the unit runs it
# (bpftool, from make deps, finds its BPF programs gone after the stop),
# the image through its layout, a chroot into its root and skopeo) on this
# machine's binary; its module tidy, vetted and linted (make lint covers
# rtscope's module only).
test-pack: build
	@command -v skopeo >/dev/null && command -v lintian >/dev/null && command -v systemd-analyze >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq skopeo lintian systemd >/dev/null; }
	cd tools/pack && $(GO) mod tidy -diff && GOARCH=$(HOSTARCH) $(GO) test -count=1 ./...
	cd tools/pack && GOARCH=$(HOSTARCH) $(GO) vet ./... && GOARCH=$(HOSTARCH) $(GO) tool -modfile=../go.mod golangci-lint run ./...

TEST_EXTRA += test-pack
