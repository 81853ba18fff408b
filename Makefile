# SPDX-License-Identifier: GPL-2.0
#
# collective: top-level build.  See README.md.
#
#   make            module (against KDIR), library, tools, tests
#   make torch      the torch.distributed backend (userlib/torch/), when
#                   Debian's torch headers are installed (part of all then)
#   make run        boot a guest, load the module, benchmark every primitive;
#                   then make bench-torch's figures (~1.5 min more)
#   make bench-hosts boot 2 guests, benchmark across them (RDMA, TCP) against
#                   ib_write_bw and Open MPI in the same boot (tools/bench-hosts.sh)
#   make bench-torch boot a guest, time torch.distributed's all_reduce of a
#                   25 MiB bucket and a DDP step, Gloo against collective
#   make check      all tests (native unit tests, guest selftests, two guests)
#   make check-debug the guest selftests on a KASAN/lockdep/kmemleak kernel
#                   built from linux-source-6.1 (~15 min the first time)
#   make lint       W=1, sparse (C=1) and checkpatch --strict on kmod/ uapi/,
#                   and nlcheck
#   make nlgen      regenerate the netlink uapi header and policy tables from
#                   uapi/collective.yaml (the kernel's YNL generator, tools/ynl/)
#   make nlcheck    check that regenerating them changes nothing
#   make install    module (modules_install), library, headers, tools
#   make deps       install the Debian packages all of this needs

# The 6.1 kernel the guests boot (Debian 12's linux-image-amd64).
GUEST_KVER ?= $(shell ls /lib/modules 2>/dev/null | grep '^6\.1\.' | sort -V | tail -1)
# Build against the running kernel's build dir when it exists, else 6.1.
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
		    $(if $(GUEST_KVER),/lib/modules/$(GUEST_KVER)/build))

PREFIX ?= /usr/local
DESTDIR ?=
BUILD := $(CURDIR)/build

DEB_PKGS := linux-image-amd64 linux-headers-amd64 linux-source-6.1 \
	qemu-system-x86 busybox-static kmod cpio xz-utils bc \
	rdma-core ibverbs-utils rdmacm-utils perftest iproute2 \
	libibverbs-dev librdmacm-dev ibverbs-providers \
	libnl-3-dev libnl-genl-3-dev openmpi-bin libopenmpi-dev \
	mpich libmpich-dev python3 \
	python3-torch libtorch-dev pybind11-dev \
	sparse gcc make flex bison libelf-dev libssl-dev rsync \
	python3-yaml python3-jsonschema liburing-dev

LINUX_SRC_TAR := /usr/src/linux-source-6.1.tar.xz
CHECKPATCH := $(BUILD)/linux-source-6.1/scripts/checkpatch.pl

# The torch backend builds only where libtorch-dev's c10d headers are.
TORCH_HDR := /usr/include/torch/csrc/distributed/c10d/ProcessGroup.hpp

all: module userlib tools selftests $(if $(wildcard $(TORCH_HDR)),torch)

# Install what is missing (as root, from Debian's archive).  INITRD=No skips
# update-initramfs for the guest kernel, which we boot with our own.
deps:
	@missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
		grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -q && \
		INITRD=No DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD)/.deps-ok:
	@$(MAKE) --no-print-directory deps
	@mkdir -p $(BUILD) && touch $@

module: $(BUILD)/.deps-ok
	@kdir='$(KDIR)'; [ -n "$$kdir" ] || \
		kdir=/lib/modules/$$(ls /lib/modules | grep '^6\.1\.' | sort -V | tail -1)/build; \
	$(MAKE) -C $$kdir M=$(CURDIR) modules

userlib: $(BUILD)/.deps-ok
	$(MAKE) -C userlib

tools: userlib
	$(MAKE) -C tools

torch: userlib
	$(MAKE) -C userlib/torch

selftests: userlib tools
	$(MAKE) -C selftests
	$(MAKE) -C selftests/unit
	$(MAKE) -C selftests/rig

# Everything, with the module built for the guests' kernel whatever the host
# runs.  A sub-make, so that GUEST_KVER is read after deps installed it.
guest-build: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory KDIR=/lib/modules/$(GUEST_KVER)/build all

run: guest-build
	selftests/rig/vm.sh --name bench --mem 4G --timeout 5400 -- tools/bench-guest.sh
	@if ls userlib/torch/torch_collective/_C*.so >/dev/null 2>&1; then \
		tools/bench-torch.sh; else echo "run: no torch backend built: bench-torch skipped"; fi

bench-hosts: guest-build
	tools/bench-hosts.sh

bench-torch: guest-build
	tools/bench-torch.sh

check: guest-build
	selftests/run-all.sh

check-debug: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory userlib tools selftests
	selftests/rig/check-debug.sh

$(CHECKPATCH): $(BUILD)/.deps-ok
	tar -xJf $(LINUX_SRC_TAR) -C $(BUILD) \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	touch $@

# The generic netlink family: uapi/collective.yaml is the source of truth.
NLSPEC := uapi/collective.yaml
YNLGEN := tools/ynl/ynl-gen.sh
NLGEN_OUT := uapi/linux/collective_nl.h kmod/coll_nl_gen.h

nlgen:
	$(YNLGEN) uapi $(NLSPEC) uapi/linux/collective_nl.h
	$(YNLGEN) policy $(NLSPEC) kmod/coll_nl_gen.h

nlcheck: $(BUILD)/.deps-ok
	@mkdir -p $(BUILD)/nlcheck
	@$(YNLGEN) uapi $(NLSPEC) $(BUILD)/nlcheck/collective_nl.h
	@$(YNLGEN) policy $(NLSPEC) $(BUILD)/nlcheck/coll_nl_gen.h
	@cmp uapi/linux/collective_nl.h $(BUILD)/nlcheck/collective_nl.h && \
	 cmp kmod/coll_nl_gen.h $(BUILD)/nlcheck/coll_nl_gen.h || \
	 { echo "nlcheck: $(NLGEN_OUT) differ from $(NLSPEC): make nlgen"; exit 1; }
	@echo "nlcheck: generated files match $(NLSPEC)"

lint: $(CHECKPATCH) nlcheck
	@kdir=/lib/modules/$$(ls /lib/modules | grep '^6\.1\.' | sort -V | tail -1)/build; \
	out=$$( { rm -f kmod/*.o kmod/.*.o.cmd; \
		$(MAKE) -C $$kdir M=$(CURDIR) W=1 C=1 modules; } 2>&1 | \
		grep -E 'warning|error|: note:' | grep -v 'Skipping BTF' ); \
	if [ -n "$$out" ]; then echo "$$out"; echo "lint: W=1/C=1 not clean"; exit 1; fi; \
	echo "lint: W=1 and sparse clean"
	$(CHECKPATCH) --no-tree --strict --quiet --show-types \
		-f kmod/coll_*.c $(filter-out kmod/coll_nl_gen.h,$(wildcard kmod/coll_*.h)) \
		uapi/linux/*.h
	@echo "lint: checkpatch --strict clean"

install: all
	@kdir='$(KDIR)'; $(MAKE) -C $$kdir M=$(CURDIR) \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install
	$(MAKE) -C userlib install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) -C tools install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

clean:
	-@kdir='$(KDIR)'; [ -d "$$kdir" ] && $(MAKE) -C $$kdir M=$(CURDIR) clean
	-$(MAKE) -C userlib clean
	-$(MAKE) -C userlib/torch clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests clean
	-$(MAKE) -C selftests/unit clean
	-$(MAKE) -C selftests/rig clean
	rm -rf $(BUILD)

.PHONY: all deps module userlib torch tools selftests guest-build run bench-hosts bench-torch check check-debug lint \
	nlgen nlcheck \
	install clean
