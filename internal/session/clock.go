package session

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// clock wakes the session's loop every period from a timerfd that Go's
// netpoller waits on, in place of a time.Timer. At the 10 ms poll a Go
// timer costs the idle agent two wakeups a period, not one: the netpoller
// sleeps in whole milliseconds (epoll_wait rounds 9.9 ms down to 9), so it
// wakes early and again 1 ms later; and sysmon, which sleeps until the
// next timer when every P is idle, wakes with it. Those wakeups were more
// than half of serve's CPU at 450k switches a second (perf, the Go
// scheduler's findRunnable and netpoll 34%, sysmon 14%). A timerfd fires
// once, and with no Go timer due sysmon stays asleep.
//
// Ticks a slow reader missed are dropped, as a time.Ticker drops them. C
// is read by one goroutine; Stop may be called once, from any goroutine.
type clock struct {
	C    <-chan time.Time
	stop func()
}

// newClock starts a clock of the given period; it falls back to a
// time.Ticker where a timerfd cannot be made (no fd left).
func newClock(period time.Duration) *clock {
	c, err := timerfdClock(period)
	if err != nil {
		t := time.NewTicker(period)
		return &clock{C: t.C, stop: t.Stop}
	}
	return c
}

// timerfdClock is a clock on a periodic timerfd, read by its own goroutine.
func timerfdClock(period time.Duration) (*clock, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking fd makes a File the netpoller waits on.
	f := os.NewFile(uintptr(fd), "timerfd")
	ts := unix.NsecToTimespec(period.Nanoseconds())
	err = unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: ts, Value: ts}, nil)
	var rc syscall.RawConn
	if err == nil {
		rc, err = f.SyscallConn()
	}
	if err != nil {
		_ = f.Close() // never read: nothing to report
		return nil, err
	}
	c := make(chan time.Time, 1)
	go tick(rc, period, c)
	return &clock{C: c, stop: func() { _ = f.Close() }}, nil // a timerfd's close cannot lose data
}

// tick sends a tick on c each time the timerfd behind rc expired, until
// its File is closed.
func tick(rc syscall.RawConn, period time.Duration, c chan<- time.Time) {
	var n uint64 // expirations since the last read
	var errno syscall.Errno
	read := func(fd uintptr) bool { // made once: a closure a tick allocated
		// A raw read: a Go syscall would wake sysmon (entersyscall) at
		// every tick, which is what the timerfd is here to spare.
		_, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&n)), 8)
		return errno != unix.EAGAIN
	}
	for {
		if err := rc.Read(read); err != nil {
			return // closed
		}
		if errno != 0 {
			time.Sleep(period) // cannot happen on a timerfd; never spin
		}
		select {
		case c <- time.Now():
		default:
		}
	}
}

// Stop stops the clock: C gets no tick but the one it may hold.
func (c *clock) Stop() { c.stop() }
