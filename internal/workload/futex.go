package workload

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futex operations (linux/futex.h); private: the words never leave the process.
const (
	futexWait     = 0
	futexWake     = 1
	futexLockPI   = 6
	futexUnlockPI = 7
	futexPrivate  = 128
)

// futex calls futex(2) from thread t (nil: not a workload thread).
func futex(t *Thread, addr *int32, op int, val int32) unix.Errno {
	_, e := t.call6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op|futexPrivate),
		uintptr(val), 0, 0, 0)
	return e
}

// Sem is a counting semaphore on a futex. Waits have no timeout on purpose:
// a timed futex wait arms an hrtimer, which a monitor would rightly see as a
// timer sleep; Close wakes every waiter instead.
type Sem struct {
	count   atomic.Int32
	waiters atomic.Int32
	closed  atomic.Bool
}

// Post adds one to the semaphore and wakes one waiter; t is the calling
// thread (nil: not a workload thread).
func (s *Sem) Post(t *Thread) {
	s.count.Add(1)
	if s.waiters.Load() > 0 {
		futex(t, (*int32)(unsafe.Pointer(&s.count)), futexWake, 1)
	}
}

// Wait takes one from the semaphore for thread t, blocking while it is
// zero. It returns false, without taking anything, once the semaphore is
// closed.
func (s *Sem) Wait(t *Thread) bool {
	for {
		if s.closed.Load() {
			return false
		}
		if v := s.count.Load(); v > 0 {
			if s.count.CompareAndSwap(v, v-1) {
				return true
			}
			continue
		}
		s.waiters.Add(1)
		if !s.closed.Load() {
			futex(t, (*int32)(unsafe.Pointer(&s.count)), futexWait, 0)
		}
		s.waiters.Add(-1)
	}
}

// Close makes every present and future Wait return false.
func (s *Sem) Close() {
	s.closed.Store(true)
	s.count.Add(1) // so a waiter about to sleep on 0 sees a change
	futex(nil, (*int32)(unsafe.Pointer(&s.count)), futexWake, 1<<30)
}

// Locker is a mutex taken and released by a given thread (the PI mutex
// stores the owner's tid in its word).
type Locker interface {
	Lock(t *Thread)
	Unlock(t *Thread)
}

// Mutex is a plain futex mutex (0 free, 1 locked, 2 locked with waiters):
// a waiter just sleeps, whatever the priority of the owner, so a
// low-priority owner preempted by a medium-priority thread keeps a
// high-priority waiter blocked. That is priority inversion.
type Mutex struct{ v atomic.Int32 }

func (m *Mutex) word() *int32 { return (*int32)(unsafe.Pointer(&m.v)) }

// Lock takes the mutex for thread t.
func (m *Mutex) Lock(t *Thread) {
	if m.v.CompareAndSwap(0, 1) {
		return
	}
	for m.v.Swap(2) != 0 {
		futex(t, m.word(), futexWait, 2)
	}
}

// Unlock releases the mutex and wakes one waiter if there may be one.
func (m *Mutex) Unlock(t *Thread) {
	if m.v.Add(-1) != 0 {
		m.v.Store(0)
		futex(t, m.word(), futexWake, 1)
	}
}

// PIMutex is a priority-inheritance futex: the word holds the owner's tid,
// and a waiter that blocks (FUTEX_LOCK_PI) lends its priority to the owner
// through the kernel's rt_mutex until FUTEX_UNLOCK_PI.
type PIMutex struct{ v atomic.Int32 }

func (m *PIMutex) word() *int32 { return (*int32)(unsafe.Pointer(&m.v)) }

// Lock takes the mutex for thread t.
func (m *PIMutex) Lock(t *Thread) {
	if m.v.CompareAndSwap(0, int32(t.Tid)) {
		return
	}
	for {
		switch e := futex(t, m.word(), futexLockPI, 0); e {
		case 0:
			return
		case unix.EINTR, unix.EAGAIN:
			continue
		default:
			panic(fmt.Sprintf("FUTEX_LOCK_PI: %v", e)) // a bug in this package, never an input error
		}
	}
}

// Unlock releases the mutex held by thread t.
func (m *PIMutex) Unlock(t *Thread) {
	if m.v.CompareAndSwap(int32(t.Tid), 0) {
		return
	}
	if e := futex(t, m.word(), futexUnlockPI, 0); e != 0 {
		panic(fmt.Sprintf("FUTEX_UNLOCK_PI: %v", e))
	}
}

// EventFD is a Linux eventfd: Signal adds to its counter, Wait blocks until
// the counter is non-zero and returns (and clears) it.
type EventFD struct {
	fd     int
	buf    [8]byte // heap scratch: Wait and Signal allocate nothing
	sigbuf [8]byte
	closed atomic.Bool
}

// NewEventFD creates an eventfd.
func NewEventFD() (*EventFD, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &EventFD{fd: fd}, nil
}

// Signal adds n to the counter from thread t (one thread signals; another
// waits).
func (e *EventFD) Signal(t *Thread, n uint64) {
	*(*uint64)(unsafe.Pointer(&e.sigbuf[0])) = n
	t.call6(unix.SYS_WRITE, uintptr(e.fd), uintptr(unsafe.Pointer(&e.sigbuf[0])), 8, 0, 0, 0) //nolint:errcheck // an eventfd write of 8 bytes cannot fail while it is open
}

// Wait blocks thread t for events and returns how many arrived since the
// last Wait; 0 once the eventfd is closed.
func (e *EventFD) Wait(t *Thread) uint64 {
	for {
		if e.closed.Load() {
			return 0
		}
		_, errno := t.call6(unix.SYS_READ, uintptr(e.fd), uintptr(unsafe.Pointer(&e.buf[0])), 8, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || e.closed.Load() {
			return 0
		}
		return *(*uint64)(unsafe.Pointer(&e.buf[0]))
	}
}

// Close wakes the waiter (Wait returns 0). Call Release once no thread uses the fd.
func (e *EventFD) Close() {
	e.closed.Store(true)
	var b [8]byte
	b[0] = 1
	unix.Write(e.fd, b[:]) //nolint:errcheck // wakes a waiter; the eventfd may be closed already
}

// Release closes the file descriptor.
func (e *EventFD) Release() { unix.Close(e.fd) } //nolint:errcheck // at release; nothing to do about a failure
