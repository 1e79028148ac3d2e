package timerlat

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 -type tl_sample -type tl_thread tl ../../bpf/timerlat.bpf.c -- -I../../bpf
