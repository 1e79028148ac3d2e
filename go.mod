module github.com/rtscope/rtscope

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/sys v0.43.0 // indirect
)
