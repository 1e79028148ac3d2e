package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// proc is a child process the bench starts and stops.
type proc struct {
	cmd  *exec.Cmd
	done chan error
	name string
}

func start(name string, stdout io.Writer, argv ...string) (*proc, error) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout = stdout
	c.Stderr = stdout
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{cmd: c, done: make(chan error, 1), name: name}
	go func() { p.done <- c.Wait() }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends sig, waits up to a minute (rtscope writes its final reports),
// then kills the process group.
func (p *proc) stop(sig syscall.Signal) error {
	_ = p.cmd.Process.Signal(sig)
	select {
	case err := <-p.done:
		return err
	case <-time.After(time.Minute):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		return errors.Join(<-p.done, fmt.Errorf("%s did not stop on %v", p.name, sig))
	}
}

func (p *proc) exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// cpuTime is the CPU time of pid and its threads so far, exited ones
// included: its process CPU clock (clock_getcpuclockid), in nanoseconds.
// /proc/PID/stat counts in ticks of 10 ms, about 10 of them in a 20 s
// window of an agent at 0.5% of a CPU: too coarse to compare two.
func cpuTime(pid int) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(processCPUClock(pid), &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processCPUClock is the CPU clock of process pid, as glibc's
// clock_getcpuclockid makes it: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED).
func processCPUClock(pid int) int32 {
	const cpuclockSched = 2
	return int32(^pid<<3 | cpuclockSched)
}

// rssBytes is VmRSS of pid.
func rssBytes(pid int) uint64 {
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer fh.Close() //nolint:errcheck // read-only
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// waitPrograms waits until pid holds at least n BPF programs (attached: the
// tools attach right after loading), then for its stats map, if named, to
// hold want entries (rtscope tracks every target).
func waitPrograms(p *proc, n int, statsWant int, links bool, timeout time.Duration) (*Objects, error) {
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			return nil, fmt.Errorf("%s exited before it was ready", p.name)
		}
		o, err := ProcObjects(p.pid())
		if err == nil && len(o.Progs) >= n && (statsWant < 0 || statsEntries(o) >= statsWant) && (!links || o.Links > 0) {
			// Give it the time to finish what follows (scan, first poll),
			// and measure only once its programs stopped coming: under load
			// the verifier takes seconds, and a window that began while
			// rtscope was still loading missed its sched_switch program.
			time.Sleep(300 * time.Millisecond)
			again, err := ProcObjects(p.pid())
			if err == nil && len(again.Progs) == len(o.Progs) && again.Links == o.Links {
				return again, nil
			}
			continue
		}
		if time.Now().After(deadline) {
			got := 0
			if o != nil {
				got = len(o.Progs)
			}
			return nil, fmt.Errorf("%s not ready after %v (%d programs)", p.name, timeout, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statsEntries counts the entries of the process's "stats" map (rtscope's
// per-task statistics): one per tracked task.
func statsEntries(o *Objects) int {
	for id := range o.Maps {
		m, err := ebpf.NewMapFromID(ebpf.MapID(id))
		if err != nil {
			continue
		}
		info, err := m.Info()
		if err != nil || info.Name != "stats" {
			m.Close()
			continue
		}
		n := 0
		key := make([]byte, info.KeySize)
		var prev any
		for m.NextKey(prev, key) == nil {
			n++
			k := append([]byte(nil), key...)
			prev = k
		}
		m.Close()
		return n
	}
	return 0
}
