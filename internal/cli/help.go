package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const rootLong = `rtscope measures what a real-time engineer asks of a Linux machine and its
tasks: wakeup and timer latency, response and cycle time, what kept a task
off its CPU and why, and whether the machine is set up for real time at all.
It hooks the scheduler with BPF and explains each worst case from the events
around it.

Start with 'rtscope doctor' (is this machine fit for real time?), then
'rtscope watch' a task or a command, or 'rtscope timerlat' the whole
machine. 'rtscope serve' is the same measurement as an always-on agent for
Prometheus, steered by 'rtscope ctl'. 'rtscope demo' shows a failure and
its explanation in 15 seconds. Every command but ctl, completion and
version needs root (or CAP_BPF and CAP_PERFMON).`

// setHelp makes every command's help rtscope's: the synopsis, the prose,
// the flags, what follows them, the examples and the exit status, on the
// command's output (stdout, unless an error prints it to stderr).
func setHelp(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { writeHelp(c.OutOrStderr(), c); return nil })
}

// writeHelp writes c's help to w.
func writeHelp(w io.Writer, c *cobra.Command) {
	var b strings.Builder
	if !c.HasParent() {
		fmt.Fprintf(&b, "rtscope: %s\n\n", c.Short)
	}
	for i, u := range synopsis(c) {
		if i == 0 {
			fmt.Fprintf(&b, "Usage: %s\n", u)
		} else {
			fmt.Fprintf(&b, "       %s\n", u)
		}
	}
	if c.Long != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	}
	if subs := subcommands(c); len(subs) > 0 {
		b.WriteString("\nCommands:\n")
		for _, s := range subs {
			fmt.Fprintf(&b, "  %-10s %s\n", s.Name(), s.Short)
		}
	}
	if fs := docFlags(c); fs.HasFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", fs.FlagUsages())
	}
	if more := c.Annotations[annMore]; more != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(more, "\n"))
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if ex := c.Annotations[annExit]; ex != "" {
		fmt.Fprintf(&b, "\n%s\n", wrap("Exit status: "+ex, 78))
	}
	if !c.HasParent() {
		b.WriteString("\nRun 'rtscope COMMAND --help' for the flags of a command, 'man rtscope-COMMAND' for its page.\n")
	}
	fmt.Fprint(w, b.String())
}

// synopsis is c's usage lines: its own, or one per subcommand.
func synopsis(c *cobra.Command) []string {
	if !c.HasParent() || c.Runnable() && len(subcommands(c)) == 0 {
		return []string{c.UseLine()}
	}
	var out []string
	for _, s := range subcommands(c) {
		out = append(out, synopsis(s)...)
	}
	return out
}

// subcommands are c's documented subcommands, by name.
func subcommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() && s.Name() != "help" {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// docFlags are the flags c documents: its own, in the order it defined
// them, without cobra's --help.
func docFlags(c *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	fs.SortFlags = false
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden {
			fs.AddFlag(f)
		}
	})
	return fs
}
