// Package engine loads rtscope's BPF programs, attaches them, and reads what
// they measure: per-task statistics, new-maximum notices and the per-CPU
// flight recorder from which worst-case traces are cut.
package engine

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 -type rts_event -type rts_notice -type rts_task_stats -type rts_metric_stats -type rts_cpu_state -type rts_target -type rts_slo -type rts_task_state -type rts_metric -type rts_hygiene -type rts_event_type -type rts_waker_ctx -type rts_notice_type -type rts_counter -type rts_sleep_reason -type rts_ipi_kind -type rts_ipi_cpu -type rts_ipi_key -type rts_ipi_pair -type rts_noise_cause bpf ../../bpf/rtscope.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 twin ../../bpf/rtscope_test.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 classic ../../bpf/classic.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3" -target amd64,arm64 classictwin ../../bpf/classic_test.bpf.c -- -I../../bpf

// The inlined variants (-DRTS_INLINE_SUBPROGS, compat.bpf.h): the same
// programs and maps, without the global functions that take pointers,
// which kernels before 5.12 refuse; Load picks one by probe
// (FeatureGlobalPtrArgs). The twins' variants are for the tests only.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3 -DRTS_INLINE_SUBPROGS" -no-global-types -target amd64,arm64 bpfinline ../../bpf/rtscope.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3 -DRTS_INLINE_SUBPROGS" -no-global-types -target amd64,arm64 classicinline ../../bpf/classic.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3 -DRTS_INLINE_SUBPROGS" -no-global-types -output-suffix _test -target amd64,arm64 twininline ../../bpf/rtscope_test.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -mcpu=v3 -DRTS_INLINE_SUBPROGS" -no-global-types -output-suffix _test -target amd64,arm64 classictwininline ../../bpf/classic_test.bpf.c -- -I../../bpf
