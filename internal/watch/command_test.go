package watch

import (
	"os"
	"syscall"
	"testing"
)

// TestCommandExitStatus: a launched command runs once resumed, and its
// exit status is reported; one still running at the end is stopped by
// rtscope, and said so.
func TestCommandExitStatus(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	c, err := launchCommand([]string{"sh", "-c", "exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.running() {
		t.Error("a command stopped at its first instruction is not running")
	}
	if err := c.resume(); err != nil {
		t.Fatal(err)
	}
	<-c.wait
	if c.running() {
		t.Error("running after its end")
	}
	c.stop() // ended: nothing to stop
	r := c.result()
	if r.ExitStatus == nil || *r.ExitStatus != 3 || r.StoppedByRtscope || r.Signal != "" {
		t.Errorf("result %+v, want exit status 3, not stopped", r)
	}

	c, err = launchCommand([]string{"sleep", "60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.resume(); err != nil {
		t.Fatal(err)
	}
	c.stop()
	r = c.result()
	if !r.StoppedByRtscope || r.Signal != "SIGTERM" || r.ExitStatus != nil {
		t.Errorf("result %+v, want stopped by rtscope with SIGTERM", r)
	}
}

// TestCommandKilledBeforeResume: a session that fails before the command
// ran kills it (never left stopped at its first instruction).
func TestCommandKilledBeforeResume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	c, err := launchCommand([]string{"sleep", "60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.kill()
	_ = c.launched.Cmd.Wait() // its error is the signal, checked below
	ps := c.launched.Cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("command not killed: %v", ps)
	}
	var nilCmd *command
	nilCmd.kill() // no command: nothing to do
	if nilCmd.running() {
		t.Error("no command is running")
	}
}
