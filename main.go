// rtscope: a real-time health scope for Linux. See README.md.
package main

//go:debug asyncpreemptoff=1

import (
	"os"

	"github.com/rtscope/rtscope/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
