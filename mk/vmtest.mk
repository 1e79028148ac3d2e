# QEMU test bed (vmtest/): Debian's PREEMPT_RT, standard amd64 and arm64
# kernels under TCG, with rtscope, cyclictest, rtla and fault-injection
# modules inside. See vmtest/README.md.
# `make vmtest VMTEST_GUESTS="rt arm64"` boots only those guests.
VMTEST_GUESTS ?=

.PHONY: vmtest
vmtest: build
	@$(MAKE) --no-print-directory build GOARCH=arm64
	vmtest/vmtest.sh $(VMTEST_GUESTS)

TEST_EXTRA += vmtest
