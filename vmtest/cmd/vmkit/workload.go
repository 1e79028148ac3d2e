package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rtThread pins the calling goroutine to its OS thread and gives that thread
// a name (its comm, what rtscope --comm matches), a CPU and a policy:
// SCHED_FIFO at prio, or SCHED_OTHER when prio is 0.
func rtThread(name string, cpu, prio int) error {
	runtime.LockOSThread()
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0); err != nil {
		return fmt.Errorf("naming the thread: %v", err)
	}
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("binding to CPU %d: %v", cpu, err)
		}
	}
	if prio > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			return fmt.Errorf("setting SCHED_FIFO %d: %v", prio, err)
		}
	}
	return nil
}

func workloadFlags(name string, args []string, extra func(*flag.FlagSet)) (fs *flag.FlagSet, comm *string, cpu, prio *int, dur *time.Duration, err error) {
	fs = flag.NewFlagSet(name, flag.ContinueOnError)
	comm = fs.String("n", "vmkit-"+name, "thread name (comm)")
	cpu = fs.Int("cpu", -1, "CPU to bind to (-1: any)")
	prio = fs.Int("p", 80, "SCHED_FIFO priority (0: SCHED_OTHER)")
	dur = fs.Duration("d", 3*time.Second, "how long to run")
	if extra != nil {
		extra(fs)
	}
	err = fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return
}

// cmdPeriodic is a minimal cyclictest: absolute clock_nanosleep on
// CLOCK_MONOTONIC every interval, latency = wake-up time - deadline;
// deadlines already past when it goes to sleep are skipped. With -count,
// it also prints how much the integer in a file (a fault injector's
// `fired` parameter) grew over its loop alone: under TCG the process's
// start takes up to a second, longer than an injection period.
func cmdPeriodic(args []string) error {
	var interval *time.Duration
	var countFile *string
	_, comm, cpu, prio, dur, err := workloadFlags("periodic", args, func(fs *flag.FlagSet) {
		interval = fs.Duration("i", time.Millisecond, "period")
		countFile = fs.String("count", "", "print how much the integer in this file grew over the loop")
	})
	if err != nil {
		return err
	}
	if *interval <= 0 {
		return fmt.Errorf("the period must be positive")
	}
	// No garbage collection while it runs (it allocates nothing in its
	// loop): a collection would need this thread to stop.
	debug.SetGCPercent(-1)
	if err := rtThread(*comm, *cpu, *prio); err != nil {
		return err
	}
	count0, err := readCount(*countFile)
	if err != nil {
		return err
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return err
	}
	next := now.Nano()
	end := next + dur.Nanoseconds()
	var loops, sum, max, missed int64
	for next < end {
		next += interval.Nanoseconds()
		// A stall (the emulator's host, a fault injector) costs one late
		// sample, not a burst of deadlines already past: skip them, as a
		// control loop that drops missed cycles would.
		if late := now.Nano() - next; late > interval.Nanoseconds() {
			skip := late / interval.Nanoseconds()
			next += skip * interval.Nanoseconds()
			missed += skip
		}
		ts := unix.NsecToTimespec(next)
		for {
			// A raw system call: the Go runtime must not see this thread
			// leave and come back. With the SCHED_FIFO thread and the
			// runtime's SCHED_OTHER threads on one CPU under TCG, the
			// runtime's hand-off of the P at a blocking call's return made
			// the FIFO thread spin for up to 1.3 s, starving the threads it
			// waited for (32-injectors, rt-1cpu).
			_, _, e := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
				uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
			if e != unix.EINTR {
				break
			}
		}
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) //nolint:errcheck // CLOCK_MONOTONIC with a valid pointer cannot fail
		lat := now.Nano() - next
		loops++
		sum += lat
		if lat > max {
			max = lat
		}
	}
	count1, err := readCount(*countFile)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d loops, avg %.1f us, max %.1f us, %d periods missed\n", *comm, loops,
		float64(sum)/float64(loops)/1e3, float64(max)/1e3, missed)
	if *countFile != "" {
		fmt.Printf("%s: %s grew by %d\n", *comm, *countFile, count1-count0)
	}
	return nil
}

// readCount reads the integer in file; an empty name reads 0.
func readCount(file string) (int64, error) {
	if file == "" {
		return 0, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", file, err)
	}
	return n, nil
}

// cmdSpin burns CPU for the duration: the competitor of contention tests.
func cmdSpin(args []string) error {
	_, comm, cpu, prio, dur, err := workloadFlags("spin", args, nil)
	if err != nil {
		return err
	}
	if err := rtThread(*comm, *cpu, *prio); err != nil {
		return err
	}
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) //nolint:errcheck // CLOCK_MONOTONIC with a valid pointer cannot fail
	end := now.Nano() + dur.Nanoseconds()
	for now.Nano() < end {
		for i := 0; i < 1000; i++ {
		}
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) //nolint:errcheck // CLOCK_MONOTONIC with a valid pointer cannot fail
	}
	return nil
}
