package isolation

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 -type iso_cpu -type iso_task -type iso_queue_key -type iso_queued -type iso_time -type iso_timer_key -type iso_timer_armed -type rts_ipi_cpu -type rts_ipi_key -type rts_ipi_pair -type rts_ipi_kind iso ../../bpf/isolation.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -no-global-types -output-suffix _test -target amd64,arm64 isotwin ../../bpf/isolation_test.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -no-global-types -target amd64,arm64 isoclassic ../../bpf/isolation_classic.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -no-global-types -output-suffix _test -target amd64,arm64 isoclassictwin ../../bpf/isolation_classic_test.bpf.c -- -I../../bpf
