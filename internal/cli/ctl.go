package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/serve"
)

func init() { RegisterCmd(newCtlCmd) }

const ctlLong = `Control a running rtscope serve through its unix socket (root only: the
socket is mode 0600 in a directory only root can write). Every command
prints the agent's state as JSON (targets, SLOs, tracked tasks). A removed
target's tasks stop being tracked at once, as if they exited (their counts
stay, so that no counter goes back; with the classic engine they stay
tracked until they exit); SLO changes apply at once to the tasks tracked
already (their counts so far are kept) and to later ones. The state never
waits for the agent's work: its tracked tasks are those of the agent's
last tick (serve --tick) or of the change just made.`

const ctlCommands = `Commands:
  list                         targets, SLOs and tracked tasks
  add --comm NAME | --pid N | --tid N | --cgroup PATH|UNIT
                               watch a target (tasks now and later)
  remove --comm NAME | --pid N | --tid N | --cgroup PATH|UNIT
                               stop watching a target
  add-slo [ID:]METRIC=TIME     set an SLO of a tid or pid, or without ID:
                               of every task (replaces the bound of the same
                               ID and metric)
  remove-slo SPEC              remove an SLO (as listed)
  reload                       reread --config, as SIGHUP does: the targets
                               and SLOs become those of the flags and file
  windows [NAME]               the archived windows (serve --archive) with
                               their verdicts, newest first; NAME: one with
                               its events`

// ctlVerbs are ctl's commands, for its errors and completion.
var ctlVerbs = []string{"list", "add", "remove", "add-slo", "remove-slo", "reload", "windows"}

// ctlFlags are ctl's command line.
type ctlFlags struct {
	socket, comm, cgroup string
	pid, tid             int
}

// flagSet defines ctl's flags into f.
func (f *ctlFlags) flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("ctl", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&f.socket, "socket", serve.DefaultSocket, "the agent's control socket (serve --socket)")
	fs.StringVar(&f.comm, "comm", "", "target task name (add, remove)")
	fs.IntVar(&f.pid, "pid", 0, "target process id (add, remove)")
	fs.IntVar(&f.tid, "tid", 0, "target thread id (add, remove)")
	fs.StringVar(&f.cgroup, "cgroup", "", "target cgroup v2 path or systemd unit name (add, remove)")
	return fs
}

// newCtlCmd builds the ctl command over ctlFlags.
func newCtlCmd() *cobra.Command {
	var f ctlFlags
	c := &cobra.Command{
		Use:               "ctl [flags] COMMAND [ARGS]",
		Short:             "control a running rtscope serve: list, add or remove targets and SLOs, reload",
		Long:              ctlLong,
		Example:           "  rtscope ctl add --comm control\n  rtscope ctl add-slo 1234:cycle=1ms\n  rtscope ctl windows",
		ValidArgsFunction: completeCtl,
		Annotations: map[string]string{annMore: ctlCommands, annSeeAlso: "rtscope-serve(1) rtscope-serve.yaml(5)",
			annExit: "0 when the agent did what was asked; 1 when it refused, or could not be reached."},
		RunE: status(func(_ *cobra.Command, args []string) int { return f.run(args) }),
	}
	return withFlags(c, f.flagSet())
}

// completeCtl completes ctl's command, and add-slo's metric.
func completeCtl(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0:
		return ctlVerbs, cobra.ShellCompDirectiveNoFileComp
	case len(args) == 1 && args[0] == "add-slo":
		return completeSLO(c, args, toComplete)
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// run sends args, the command and its argument, to the agent.
func (f *ctlFlags) run(args []string) int {
	if len(args) == 0 {
		return Fail("ctl", fmt.Errorf("missing command (%s)", strings.Join(ctlVerbs, ", ")))
	}
	cmd, rest := args[0], args[1:]
	t := serve.TargetConfig{Comm: f.comm, PID: f.pid, TID: f.tid, Cgroup: f.cgroup}
	isTarget := cmd == "add" || cmd == "remove"
	if !isTarget && t != (serve.TargetConfig{}) {
		return Fail("ctl", fmt.Errorf("--comm, --pid, --tid and --cgroup go with add and remove, not %s", cmd))
	}
	wantArgs := 0
	if cmd == "add-slo" || cmd == "remove-slo" {
		wantArgs = 1
	}
	if cmd == "windows" && len(rest) == 1 {
		wantArgs = 1
	}
	if len(rest) != wantArgs {
		return Fail("ctl", fmt.Errorf("%s takes %d argument(s), not %d", cmd, wantArgs, len(rest)))
	}
	if isTarget {
		if err := t.Check(); err != nil {
			return Fail("ctl", fmt.Errorf("%s: %w (--comm, --pid, --tid or --cgroup)", cmd, err))
		}
	}
	c := serve.NewClient(f.socket)
	var out json.RawMessage
	var err error
	switch cmd {
	case "list":
		err = c.Do(http.MethodGet, serve.PathTargets, nil, &out)
	case "add":
		err = c.Do(http.MethodPost, serve.PathTargets, t, &out)
	case "remove":
		err = c.Do(http.MethodDelete, serve.PathTargets, t, &out)
	case "add-slo":
		err = c.Do(http.MethodPost, serve.PathSLO, serve.SLORequest{SLO: rest[0]}, &out)
	case "remove-slo":
		err = c.Do(http.MethodDelete, serve.PathSLO, serve.SLORequest{SLO: rest[0]}, &out)
	case "reload":
		err = c.Do(http.MethodPost, serve.PathReload, nil, &out)
	case "windows":
		path := serve.PathWindows
		if len(rest) == 1 {
			path += "/" + url.PathEscape(rest[0])
		}
		err = c.Do(http.MethodGet, path, nil, &out)
	default:
		return Fail("ctl", fmt.Errorf("unknown command %q (%s)", cmd, strings.Join(ctlVerbs, ", ")))
	}
	if err != nil {
		return Fail("ctl", err)
	}
	fmt.Println(string(out))
	return 0
}
