// Package inject loads rtscope's kernel-side fault injectors (bpf/inject.bpf.c):
// a busy-wait in hard-IRQ context on a CPU's timer interrupt, and a busy-wait
// in kernel context with preemption disabled. No kernel module is involved,
// and every attachment dies with the process.
package inject

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 -type inj_stats inject ../../bpf/inject.bpf.c -- -I../../bpf
