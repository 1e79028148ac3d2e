package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"github.com/spf13/pflag"

	"github.com/rtscope/rtscope/internal/serve"
)

func init() {
	Register(&Command{Name: "ctl", Summary: "control a running rtscope serve: list, add or remove targets and SLOs, reload", Run: runCtl})
}

const ctlUsage = `Usage: rtscope ctl [--socket PATH] COMMAND [ARGS]

Control a running rtscope serve through its unix socket (root only).
Every command prints the agent's state as JSON (targets, SLOs, tracked
tasks). A removed target's tasks stay tracked until they exit, so that no
counter goes back; SLO changes apply at once to the tasks tracked already
(their counts so far are kept) and to later ones.

Commands:
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
                               its events

Flags:
`

func runCtl(args []string) int {
	fs := pflag.NewFlagSet("ctl", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetInterspersed(true)
	socket := fs.String("socket", serve.DefaultSocket, "the agent's control socket (serve --socket)")
	comm := fs.String("comm", "", "target task name (add, remove)")
	pid := fs.Int("pid", 0, "target process id (add, remove)")
	tid := fs.Int("tid", 0, "target thread id (add, remove)")
	cgroup := fs.String("cgroup", "", "target cgroup v2 path or systemd unit name (add, remove)")
	fs.Usage = func() { fmt.Fprint(os.Stderr, ctlUsage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return Fail("ctl", err)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return Fail("ctl", errors.New("missing command (list, add, remove, add-slo, remove-slo, reload, windows)"))
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	t := serve.TargetConfig{Comm: *comm, PID: *pid, TID: *tid, Cgroup: *cgroup}
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
	c := serve.NewClient(*socket)
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
		return Fail("ctl", fmt.Errorf("unknown command %q (list, add, remove, add-slo, remove-slo, reload, windows)", cmd))
	}
	if err != nil {
		return Fail("ctl", err)
	}
	fmt.Println(string(out))
	return 0
}
