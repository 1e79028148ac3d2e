// Command pack builds rtscope's Debian package (make deb) and its OCI
// image (make image) from the static binaries that make build writes, with
// libraries rather than by hand: goreleaser's nfpm writes the .deb and
// go-containerregistry the image, so neither needs dpkg-buildpackage nor a
// container daemon. It is its own module (tools/pack/go.mod) so that the
// packagers' dependencies stay out of rtscope's.
//
//	pack deb   -root DIR -arch amd64|arm64 -bin FILE -version V -out DIR
//	pack image -root DIR -arch amd64|arm64 -bin FILE -version V -out FILE
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

// options are the command line of both subcommands.
type options struct {
	root    string // the repository: contrib/, man/, docs/
	arch    string // Debian and OCI architecture name: amd64, arm64
	bin     string // the static rtscope binary of arch
	host    string // a binary that runs here, for completion scripts ("": none)
	version string // git describe's, made a Debian version if it is none
	out     string // deb: directory; image: the archive's path
	mtime   time.Time
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "deb" && os.Args[1] != "image") {
		fmt.Fprintln(os.Stderr, "usage: pack deb|image -root DIR -arch ARCH -bin FILE -version V -out PATH")
		os.Exit(2)
	}
	var o options
	fs := flag.NewFlagSet("pack "+os.Args[1], flag.ExitOnError)
	fs.StringVar(&o.root, "root", ".", "the repository's root")
	fs.StringVar(&o.arch, "arch", "amd64", "architecture: amd64 or arm64")
	fs.StringVar(&o.bin, "bin", "rtscope", "the static rtscope binary of -arch")
	fs.StringVar(&o.host, "host-bin", "", "an rtscope that runs here, for the completion scripts (empty: -bin when -arch is this machine's)")
	fs.StringVar(&o.version, "version", "0.0.0", "the version (git describe)")
	fs.StringVar(&o.out, "out", "dist", "deb: the output directory; image: the archive to write")
	epoch := fs.Int64("mtime", 0, "the files' time, seconds since 1970 (default: $SOURCE_DATE_EPOCH, else now)")
	_ = fs.Parse(os.Args[2:]) // ExitOnError
	o.mtime = sourceTime(*epoch)
	var path string
	var err error
	if os.Args[1] == "deb" {
		path, err = buildDeb(o)
	} else {
		path, err = o.out, buildImage(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pack %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	fmt.Println(path)
}

// sourceTime is the packages' file time: epoch when set, else
// $SOURCE_DATE_EPOCH (make sets the commit's), else now.
func sourceTime(epoch int64) time.Time {
	if epoch == 0 {
		epoch, _ = strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	}
	if epoch <= 0 {
		return time.Now().UTC().Truncate(time.Second)
	}
	return time.Unix(epoch, 0).UTC()
}
