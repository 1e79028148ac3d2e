package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/inject"
	"github.com/rtscope/rtscope/internal/isolation"
	"github.com/rtscope/rtscope/internal/timerlat"
)

// Commit and BuildDate are set at build time, as Version is (-ldflags
// "-X ...cli.Commit=..."); the Makefile takes the date from
// SOURCE_DATE_EPOCH when set, so that a package build is reproducible.
var (
	Commit    = "unknown"
	BuildDate = "unknown"
)

func init() { RegisterCmd(newVersionCmd) }

// BuildInfo is what rtscope version prints: enough to tell two builds
// apart by what they run, the BPF objects included.
type BuildInfo struct {
	Schema    string          `json:"schema"`
	Version   string          `json:"version"`
	Commit    string          `json:"commit"`
	BuildDate string          `json:"build_date"`
	Go        string          `json:"go"`
	Arch      string          `json:"arch"`
	Engines   []string        `json:"engines"`
	Objects   []engine.Object `json:"bpf_objects"`
}

// buildInfo collects BuildInfo from the binary itself.
func buildInfo() BuildInfo {
	objs := append(engine.Objects(), timerlat.Object(), isolation.Object(), isolation.ClassicObject(),
		engine.Object{Name: "inject.bpf.o (scenario fault injectors)", SHA256: inject.ObjectSHA256()})
	return BuildInfo{Schema: "rtscope.version/v1", Version: Version, Commit: Commit, BuildDate: BuildDate,
		Go: runtime.Version(), Arch: runtime.GOOS + "/" + runtime.GOARCH,
		Engines: []string{engine.EngineBTF, engine.EngineClassic}, Objects: objs}
}

// writeText prints the version on its first line (as rtscope --version
// always did), then the rest.
func (b BuildInfo) writeText(w io.Writer) {
	fmt.Fprintln(w, "rtscope", b.Version)
	fmt.Fprintf(w, "commit      %s\nbuilt       %s\ngo          %s (%s)\nengines     %s, %s (each also inlined for kernels < 5.12)\n",
		b.Commit, b.BuildDate, b.Go, b.Arch, b.Engines[0], b.Engines[1])
	fmt.Fprintln(w, "BPF objects (sha256):")
	for _, o := range b.Objects {
		fmt.Fprintf(w, "  %s  %s\n", o.SHA256[:16], o.Name)
	}
}

// newVersionCmd builds the version command (as rtscope --version).
func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "print the version, commit, build date, Go version, engines and BPF object hashes",
		Long: "Print rtscope's version on the first line, then the commit it was built from, the build date, " +
			"the Go version and architecture, the engines compiled in (btf: tp_btf programs, for kernels with BTF; " +
			"classic: classic tracepoints, for kernels without), and the SHA-256 of each BPF object embedded in the " +
			"binary (the first 16 hex digits; --json gives them whole).",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			b := buildInfo()
			if !asJSON {
				b.writeText(c.OutOrStdout())
				return nil
			}
			enc := json.NewEncoder(c.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(b)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the same as a JSON document (schema rtscope.version/v1)")
	return c
}
