package main

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// runHelper is the "threads" helper process: n threads, each woken by an
// absolute periodic timer (random phase, so wakeups spread over the period),
// and one thread that never wakes (a target that costs nothing). It prints
// "tids ..." and "idle TID" once every thread runs, then runs until killed.
func runHelper(args []string) {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench helper THREADS PERIOD")
		os.Exit(2)
	}
	n, err := strconv.Atoi(args[0])
	period, perr := time.ParseDuration(args[1])
	if err != nil || perr != nil || n < 0 || period <= 0 {
		fmt.Fprintln(os.Stderr, "bench helper: THREADS must be a count and PERIOD a duration")
		os.Exit(2)
	}
	// One P per thread: a thread coming back from its sleep never waits for
	// another to hand over a P (no extra futex wakeups in the measured load).
	runtime.GOMAXPROCS(n + 2)
	tids := make(chan int, n+1)
	for i := 0; i < n; i++ {
		phase := time.Duration(rand.Int63n(int64(period)))
		go periodic(period, phase, tids)
	}
	go func() {
		runtime.LockOSThread()
		tids <- unix.Gettid()
		for {
			_ = unix.Nanosleep(&unix.Timespec{Sec: 1 << 30}, nil)
		}
	}()
	var list []string
	for i := 0; i < n; i++ {
		list = append(list, strconv.Itoa(<-tids))
	}
	idle := <-tids
	fmt.Printf("tids %s\nidle %d\n", strings.Join(list, ","), idle)
	select {}
}

func periodic(period, phase time.Duration, tids chan<- int) {
	runtime.LockOSThread()
	tids <- unix.Gettid()
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	next := ts.Nano() + int64(phase)
	for {
		next += int64(period)
		t := unix.NsecToTimespec(next)
		for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &t, nil) == unix.EINTR {
		}
	}
}
