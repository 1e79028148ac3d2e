// Package cli is rtscope's command line: a spf13/cobra command tree over
// the pflag flags each command defines (flags.go and the command's flags
// struct). Each command lives in its own file of this package and
// registers its constructor in init(); the flags are checked into the
// options of the package that does the work (docs/design.md 2.1).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commands are the constructors of rtscope's subcommands, in the order
// they registered (the help sorts them by name).
var commands []func() *cobra.Command

// RegisterCmd adds a command's constructor; called from init() of each
// command's file. A command is built afresh for each run, so that its
// flags start from their defaults.
func RegisterCmd(newCmd func() *cobra.Command) { commands = append(commands, newCmd) }

// Command is a command that parses its own arguments, as every command
// did before cobra: Run gets them all, --help included, and returns the
// exit status.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string) int
}

// Register adds a command that parses its own arguments. It has no flags
// for its help, man page and completion (TestManFlagsAgreeWithHelp fails
// on it) until it defines them for cobra and registers with RegisterCmd.
func Register(c *Command) { RegisterCmd(func() *cobra.Command { return selfParsed(c) }) }

// selfParsed is the cobra command of c: every argument goes to c.Run.
func selfParsed(c *Command) *cobra.Command {
	return &cobra.Command{Use: c.Name + " [flags]", Short: c.Summary, DisableFlagParsing: true,
		RunE: status(func(_ *cobra.Command, args []string) int { return c.Run(args) })}
}

// Version is set at build time (-ldflags "-X ...cli.Version=...").
var Version = "dev"

// The annotations of a command that its help and man page print besides
// cobra's fields: what follows the flags (the metric names, the actions),
// and the exit status.
const (
	annMore = "rtscope:more"
	annExit = "rtscope:exit"
)

// exitStatus is a command's non-zero exit status, returned through cobra
// as an error once the command printed its own message.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// status adapts a command's run, which returns its exit status, to cobra.
func status(run func(c *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if code := run(c, args); code != 0 {
			return exitStatus(code)
		}
		return nil
	}
}

// withFlags gives c the flags of fs, the pflag set its command defined,
// in their order: cobra parses them into the command's flags struct.
func withFlags(c *cobra.Command, fs *pflag.FlagSet) *cobra.Command {
	c.Flags().SortFlags = false
	c.Flags().AddFlagSet(fs)
	return c
}

// NewRoot builds rtscope's command tree: every registered command, help,
// completion and version, writing help and completion to stdout.
func NewRoot() *cobra.Command { return newRoot(os.Stdout) }

// newRoot builds the tree with help and completion scripts written to out
// (cobra's completion command takes its output when it is made).
func newRoot(out io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "rtscope COMMAND [flags]",
		Short: "a real-time health scope for Linux",
		Long:  rootLong,
		Example: `  rtscope doctor
  rtscope watch --slo latency=100us -- ./control
  rtscope timerlat -d 10s
  rtscope demo
  source <(rtscope completion bash)`,
		Annotations: map[string]string{annExit: "0 on success; 1 on an error of rtscope's own or a usage error; " +
			"2 when an SLO was violated (watch, timerlat) or a check failed (doctor); see each command's page."},
		Version:                    Version,
		SilenceErrors:              true,
		SilenceUsage:               true,
		DisableAutoGenTag:          true,
		SuggestionsMinimumDistance: 2,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				return fmt.Errorf("unknown command %q (did you mean %s?)", args[0], strings.Join(s, " or "))
			}
			return fmt.Errorf("unknown command %q (run 'rtscope help')", args[0])
		},
		RunE: status(func(c *cobra.Command, _ []string) int {
			// No command: the usage, as an error, on stderr (2 means an
			// SLO was violated, report.ExitSLOViolated).
			c.SetOut(os.Stderr)
			_ = c.Help()
			return 1
		}),
	}
	root.Flags().BoolP("version", "V", false, "print the version")
	root.SetVersionTemplate("rtscope {{.Version}}\n")
	root.SetOut(out)
	root.SetErr(os.Stderr)
	for _, newCmd := range commands {
		root.AddCommand(newCmd())
	}
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Short = "print the shell completion script: bash, zsh, fish or powershell"
		c.Example = "  source <(rtscope completion bash)\n  rtscope completion fish > ~/.config/fish/completions/rtscope.fish"
		c.RunE = func(*cobra.Command, []string) error {
			return errors.New("name a shell: bash, zsh, fish or powershell")
		}
	}
	setHelp(root)
	addCompletions(root)
	return root
}

// Main runs rtscope with its arguments (without the program name) and
// returns its exit status. Requested help goes to stdout; errors, usage
// errors included, to stderr in one line.
func Main(args []string) int {
	root := NewRoot()
	root.SetArgs(args)
	stop, err := startCPUProfile(os.Getenv(CPUProfileEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "rtscope: %v\n", err)
		return 1
	}
	defer stop()
	stopHeap, err := startHeapProfiles(os.Getenv(MemProfileEnv), os.Getenv(MemProfileEveryEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "rtscope: %v\n", err)
		return 1
	}
	defer func() {
		stopHeap()
		if err := writeHeapProfile(os.Getenv(MemProfileEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "rtscope: %v\n", err)
		}
	}()
	c, err := root.ExecuteC()
	var st exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st)
	}
	// cobra's own: an unknown command or flag, a flag's bad value.
	fmt.Fprintf(os.Stderr, "%s: %v\n", c.CommandPath(), err)
	return 1
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
