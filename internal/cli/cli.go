// Package cli dispatches rtscope's commands. Each command lives in its own
// file of this package and registers itself in init().
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Command is one rtscope subcommand.
type Command struct {
	Name    string
	Summary string
	// Run executes the command with its arguments and returns the exit status.
	Run func(args []string) int
}

var commands = map[string]*Command{}

// Register adds a command; called from init() of each command's file.
func Register(c *Command) { commands[c.Name] = c }

// Version is set at build time (-ldflags "-X ...cli.Version=...").
var Version = "dev"

// Main runs rtscope with its arguments (without the program name).
func Main(args []string) int {
	if len(args) == 0 {
		usage()
		return 1 // 2 means an SLO was violated (report.ExitSLOViolated)
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.Run([]string{"--help"})
			}
		}
		usage()
		return 0
	case "-V", "--version", "version":
		fmt.Println("rtscope", Version)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "rtscope: unknown command %q (run 'rtscope help')\n", args[0])
		return 1
	}
	stop, err := startCPUProfile(os.Getenv(CPUProfileEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "rtscope: %v\n", err)
		return 1
	}
	defer stop()
	return c.Run(args[1:])
}

func usage() {
	var b strings.Builder
	b.WriteString("rtscope: a real-time health scope for Linux\n\nUsage: rtscope COMMAND [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].Summary)
	}
	b.WriteString("  version    print the version\n\nRun 'rtscope COMMAND --help' for the flags of a command.\n")
	fmt.Fprint(os.Stderr, b.String())
}

// Fail prints one error sentence and returns the exit status for bad input or a failed run.
func Fail(cmd string, err error) int {
	fmt.Fprintf(os.Stderr, "rtscope %s: %v\n", cmd, err)
	return 1
}

// stopSignals returns a context that ends on the signals that end a run:
// Ctrl-C, SIGTERM, SIGHUP (a closed terminal) and SIGPIPE (stdout's reader
// gone, as with `| head`). The run then ends as at its duration: the final
// report and files are written (the text to a closed pipe is lost, the
// files are not); without this, SIGHUP and SIGPIPE killed rtscope with no
// report at all.
func stopSignals() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
}
