package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/timerlat"
)

func init() {
	Register(&Command{Name: "timerlat", Summary: "system-wide timer latency per CPU, as rtla timerlat top|hist and cyclictest", Run: runTimerlat})
}

func runTimerlat(args []string) int {
	o, help, err := timerlat.ParseArgs(args, os.Stderr)
	if help {
		return 0
	}
	if err != nil {
		return Fail("timerlat", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, ttyErr := unix.IoctlGetTermios(int(os.Stdout.Fd()), unix.TCGETS)
	env := timerlat.Env{Out: os.Stdout, Err: os.Stderr, OnStop: timerlatStopHook(), TTY: ttyErr == nil}
	res, err := timerlat.Run(ctx, &o, env)
	if err != nil {
		return Fail("timerlat", err)
	}
	// With --json - the document is the whole of stdout.
	if o.JSONFile != "-" {
		timerlat.Print(os.Stdout, res, &o)
	}
	if o.JSONFile != "" {
		if err := writeTimerlatJSON(o.JSONFile, res, &o); err != nil {
			return Fail("timerlat", err)
		}
	}
	return 0
}

func writeTimerlatJSON(path string, res *timerlat.Result, o *timerlat.Options) error {
	if path == "-" {
		return timerlat.WriteJSON(os.Stdout, res, o)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--json: %v", err)
	}
	if err := timerlat.WriteJSON(f, res, o); err != nil {
		f.Close()
		return fmt.Errorf("--json: writing %s: %v", path, err)
	}
	return f.Close()
}

// timerlatStopHook is the single place where the auto-analysis of a stop is
// wired in (issue 4: the analysis library, internal/analysis, working on the
// window that internal/trace cut). Until that library exists it returns nil:
// a stop then prints the offending sample, and -t still saves its window.
func timerlatStopHook() timerlat.StopHook {
	return nil
}
