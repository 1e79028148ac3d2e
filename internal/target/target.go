// Package target validates what `rtscope watch` is asked to watch, and
// launches a command so that it is tracked from its first instruction.
package target

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// CommLen is the longest task name the kernel keeps (TASK_COMM_LEN - 1).
const CommLen = 15

// Spec is the set of targets of one watch.
type Spec struct {
	TIDs  []int
	PIDs  []int
	Comms []string
	// Cgroups: cgroup v2 paths or systemd unit names (Cgroup): every task
	// in the cgroup or below it, now and when it enters later.
	Cgroups []string
	Command []string
	// User is who the Command runs as (nil: as rtscope, root).
	User *syscall.Credential
}

// Empty tells whether nothing is targeted.
func (s Spec) Empty() bool {
	return len(s.TIDs) == 0 && len(s.PIDs) == 0 && len(s.Comms) == 0 && len(s.Cgroups) == 0 && len(s.Command) == 0
}

// Validate checks every target exists and is well-formed, before anything is loaded.
func (s Spec) Validate() error {
	if s.Empty() {
		return errors.New("nothing to watch: give --tid, --pid, --comm, --cgroup or a command after --")
	}
	for _, tid := range s.TIDs {
		if err := checkID("thread", tid); err != nil {
			return err
		}
	}
	for _, pid := range s.PIDs {
		if err := checkID("process", pid); err != nil {
			return err
		}
		tgid, err := Tgid(pid)
		if err != nil {
			return fmt.Errorf("process %d does not exist", pid)
		}
		if tgid != pid {
			return fmt.Errorf("%d is a thread of process %d, not a process: use --tid %d, or --pid %d", pid, tgid, pid, tgid)
		}
	}
	for _, c := range s.Comms {
		if c == "" {
			return errors.New("--comm needs a task name")
		}
		if len(c) > CommLen {
			return fmt.Errorf("task name %q is longer than the kernel keeps (%d characters): use its first %d characters, %q", c, CommLen, CommLen, c[:CommLen])
		}
	}
	for _, c := range s.Cgroups {
		if _, _, err := Cgroup(c); err != nil {
			return err
		}
	}
	if len(s.Command) > 0 {
		if _, err := exec.LookPath(s.Command[0]); err != nil {
			return fmt.Errorf("cannot execute %q: %v", s.Command[0], unwrapExec(err))
		}
	}
	return nil
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

func checkID(kind string, id int) error {
	switch {
	case id == 0:
		return fmt.Errorf("%s id 0 is the idle task, which cannot be watched", kind)
	case id < 0:
		return fmt.Errorf("%s id %d is negative", kind, id)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", id)); err != nil {
		return fmt.Errorf("%s %d does not exist", kind, id)
	}
	if state, _ := status(id, "State"); strings.HasPrefix(state, "Z") || strings.HasPrefix(state, "X") {
		return fmt.Errorf("%s %d has exited", kind, id)
	}
	return nil
}

// Tgid returns the process a thread belongs to.
func Tgid(tid int) (int, error) {
	v, err := status(tid, "Tgid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// Alive tells whether a task still exists (and is not a zombie).
func Alive(id int) bool {
	state, err := status(id, "State")
	return err == nil && !strings.HasPrefix(state, "Z") && !strings.HasPrefix(state, "X")
}

func status(id int, key string) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", id))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no %s in /proc/%d/status", key, id)
}

// Launched is a command stopped right after its execve, before its first
// instruction, until Resume.
type Launched struct {
	Cmd     *exec.Cmd
	Pid     int
	resumed bool
}

// Launch starts argv under ptrace so that it stops at its first instruction.
// The calling goroutine stays locked to its OS thread (the tracer) until Resume.
func Launch(argv []string, user *syscall.Credential) (*Launched, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("cannot execute %q: %v", argv[0], unwrapExec(err))
	}
	runtime.LockOSThread()
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Not rtscope's GODEBUG (see main.go); the user's HOME, USER, LOGNAME.
	cmd.Env = LoginEnv(UserEnv(os.Environ()), user)
	// Pdeathsig: if rtscope dies (SIGKILL, OOM), the command dies with it
	// rather than running on unwatched under PID 1. The kernel sends it when
	// the forking thread exits: this thread stays locked until Resume, and
	// the Go runtime does not end unlocked threads.
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Credential: user, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("cannot execute %q: %v", argv[0], unwrapExec(err))
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		_ = cmd.Process.Kill()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("command %q did not stop at its start (%v)", argv[0], err)
	}
	return &Launched{Cmd: cmd, Pid: cmd.Process.Pid}, nil
}

// Resume lets the command run: it detaches from it (no ptrace remains).
func (l *Launched) Resume() error {
	if l.resumed {
		return nil
	}
	l.resumed = true
	defer runtime.UnlockOSThread()
	return syscall.PtraceDetach(l.Pid)
}
