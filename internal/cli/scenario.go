package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/scenario"
)

func init() { RegisterCmd(newScenarioCmd) }

const scenarioLong = `Built-in workloads that provoke the classic real-time failure modes on
demand: misconfigured priorities, hidden blocking, priority inversion, RT
hogs, hard-IRQ noise, preemption-off sections. Each pins its threads to one
CPU (the last one unless --cpu), sets their policies itself, locks memory,
prints its own measurements at the end and cleans everything up on exit,
Ctrl-C or SIGTERM. Watch one with:

  rtscope watch --show THREADS -- rtscope scenario run NAME

Times take a unit: 500us, 2ms, 1s. Needs root (RT priorities, BPF injectors).
'rtscope scenario run NAME --help' describes one scenario and its flags.`

// newScenarioCmd builds the scenario command and its list and run.
func newScenarioCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "scenario",
		Short: "list or run built-in real-time workloads and fault injections",
		Long:  scenarioLong,
		Annotations: map[string]string{annSeeAlso: "rtscope-demo(1) rtscope-watch(1)", annMore: "Scenarios:\n" + scenarioCatalogue(),
			annExit: "0 when the scenario ran to its end or was stopped by a signal; 1 on an error (bad flags, not root); 2 without a subcommand."},
		Example: "  rtscope scenario list\n  rtscope scenario run priority-inversion --pi --duration 5s\n" +
			"  rtscope watch --show task-H,task-M,task-L -- rtscope scenario run priority-inversion",
		RunE: status(func(c *cobra.Command, args []string) int {
			switch {
			case len(args) == 0:
				c.SetOut(os.Stderr)
				_ = c.Help()
				return 2
			case args[0] == "help":
				_ = c.Help()
				return 0
			}
			return Fail("scenario", fmt.Errorf("unknown subcommand %q (use list or run)", args[0]))
		}),
	}
	c.AddCommand(&cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "list the scenarios, their threads and flags",
		RunE: status(func(_ *cobra.Command, args []string) int {
			if len(args) > 0 {
				return Fail("scenario list", fmt.Errorf("unexpected argument %q", args[0]))
			}
			listScenarios(os.Stdout)
			return 0
		}),
	}, &cobra.Command{
		Use:   "run NAME [--cpu N] [--duration D] [flags]",
		Short: "run one scenario",
		// Each scenario has flags of its own: run parses them itself.
		DisableFlagParsing: true,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return scenario.Names(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: status(func(c *cobra.Command, args []string) int { return runOneScenario(c.Parent(), args) }),
	})
	return c
}

// scenarioCatalogue is the list of scenarios, as 'scenario list' prints it.
func scenarioCatalogue() string {
	var b strings.Builder
	listScenarios(&b)
	return b.String()
}

func listScenarios(w io.Writer) {
	for i, s := range scenario.All() {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", s.Name, s.Summary)
		fmt.Fprintf(w, "  threads: %s\n", strings.Join(s.Threads(), ", "))
		if s.Injector != "" {
			fmt.Fprintf(w, "  injects: %s\n", s.Injector)
		}
		var ps []string
		for _, p := range s.Params {
			if p.Kind == scenario.Bool {
				ps = append(ps, "--"+p.Name)
			} else {
				ps = append(ps, fmt.Sprintf("--%s %s", p.Name, p.Format(p.Default)))
			}
		}
		fmt.Fprintf(w, "  flags:   %s\n", strings.Join(ps, ", "))
	}
	fmt.Fprintln(w, "\nEvery scenario also takes --cpu N and --duration D. 'rtscope scenario run NAME --help' describes one.")
}

// runOneScenario runs 'scenario run' with its arguments (the scenario's
// name and flags); parent, the scenario command, gives the help without
// a name.
func runOneScenario(parent *cobra.Command, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			_ = parent.Help()
			return 0
		}
		return Fail("scenario run", fmt.Errorf("name a scenario (one of %s)", strings.Join(scenario.Names(), ", ")))
	}
	s, err := scenario.Get(args[0])
	if err != nil {
		return Fail("scenario run", err)
	}
	var cfg scenario.Config
	fs, collect := s.Flags(&cfg)
	quiet := fs.BoolP("quiet", "q", false, "do not print the scenario's own measurements at the end")
	fs.Usage = func() {
		fmt.Fprintf(os.Stdout, "Usage: rtscope scenario run %s [flags]\n\n%s\n\nThreads: %s\n",
			s.Name, wrap(s.Description, 78), strings.Join(s.Threads(), ", "))
		if s.Injector != "" {
			fmt.Fprintf(os.Stdout, "Injects: %s\n", s.Injector)
		}
		fmt.Fprintf(os.Stdout, "\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return Fail("scenario run", err)
	}
	if fs.NArg() > 0 {
		return Fail("scenario run", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	collect()
	// One sentence with the remedy, not the first step that fails (the
	// CPU claim's lock under /run/rtscope: "permission denied").
	if os.Geteuid() != 0 {
		return Fail("scenario run", errors.New("scenarios need root: they claim a CPU (a lock under /run/rtscope), set real-time priorities, lock memory and load BPF injectors; run with sudo (launched by rtscope watch under sudo: give watch --user root)"))
	}
	if !*quiet {
		cfg.Out = os.Stdout
	}
	ctx, stop := stopSignals()
	defer stop()
	if _, err := s.Run(ctx, cfg); err != nil {
		return Fail("scenario run", err)
	}
	return 0
}

// wrap folds text at width columns.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
