module github.com/rtscope/rtscope

go 1.26.8

require (
	github.com/bufbuild/protocompile v0.14.1
	github.com/cilium/ebpf v0.22.0
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.43.0
	google.golang.org/protobuf v1.36.12
)

require golang.org/x/sync v0.20.0 // indirect
