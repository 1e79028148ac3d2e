package watch

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/target"
)

// command is the command a watch launches (Options.Targets.Command): it
// starts stopped at its first instruction, runs once its first task is
// tracked, and is never left running unwatched. Session goroutine only.
type command struct {
	argv     []string
	launched *target.Launched
	wait     chan struct{} // closed once it has ended
	exited   bool          // its end was seen
	stopped  bool          // rtscope ended it (the watch ended first)
	// goProgram: it is a Go program, whose first thread is the runtime's
	// (report.Selection.GoPIDs).
	goProgram bool
}

// launchCommand starts argv as user (nil: rtscope's), stopped at its
// first instruction.
func launchCommand(argv []string, user *syscall.Credential) (*command, error) {
	l, err := target.Launch(argv, user)
	if err != nil {
		return nil, err
	}
	return &command{argv: argv, launched: l, goProgram: isGo(argv[0])}, nil
}

// isGo tells whether the program run as argv0 is a Go program (it has Go's
// build information): reading it takes well under a millisecond.
func isGo(argv0 string) bool {
	path, err := exec.LookPath(argv0)
	if err != nil {
		return false
	}
	_, err = buildinfo.ReadFile(path)
	return err == nil
}

// pid is the command's first task.
func (c *command) pid() int { return c.launched.Pid }

// resume lets the command run, and waits for its end on a goroutine (its
// status is read from Cmd.ProcessState at the end).
func (c *command) resume() error {
	if err := c.launched.Resume(); err != nil {
		return err
	}
	done, cmd := make(chan struct{}), c.launched.Cmd
	c.wait = done
	go func() { _ = cmd.Wait(); close(done) }()
	return nil
}

// running tells whether the command has not ended yet (without waiting).
func (c *command) running() bool {
	if c == nil {
		return false
	}
	if c.wait != nil && !c.exited {
		select {
		case <-c.wait:
			c.exited = true
		default:
		}
	}
	return !c.exited
}

// stopGrace is how long the command has to end after SIGTERM before it is
// killed.
const stopGrace = 2 * time.Second

// stop ends the command if it still runs when the watch ends: SIGTERM,
// then SIGKILL after stopGrace.
func (c *command) stop() {
	if !c.running() {
		return
	}
	c.stopped = true
	_ = c.launched.Cmd.Process.Signal(unix.SIGTERM)
	select {
	case <-c.wait:
	case <-time.After(stopGrace):
		_ = c.launched.Cmd.Process.Kill()
		<-c.wait
	}
	c.exited = true
}

// kill kills the command if the session fails before it ended: it is never
// left running unwatched, nor stopped at its first instruction.
func (c *command) kill() {
	if c == nil || c.exited {
		return
	}
	_ = c.launched.Cmd.Process.Kill() // failing or stopped: gone or going
	if c.wait != nil {
		<-c.wait
	}
}

// result says how the command ended.
func (c *command) result() *report.Command {
	return commandResult(c.argv, c.launched.Cmd.ProcessState, c.stopped)
}

// commandResult says how the launched command ended; stopped: rtscope
// ended it.
func commandResult(argv []string, ps *os.ProcessState, stopped bool) *report.Command {
	c := &report.Command{Argv: argv, StoppedByRtscope: stopped}
	if ps == nil {
		return c
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		c.Signal = unix.SignalName(ws.Signal())
		c.SignalNo = int(ws.Signal())
		return c
	}
	code := ps.ExitCode()
	c.ExitStatus = &code
	return c
}
