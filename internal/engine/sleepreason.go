package engine

import (
	"fmt"
	"sort"

	"github.com/rtscope/rtscope/internal/ksym"
)

// Sleep reasons (enum rts_sleep_reason), in the flags of an EventSleep: why
// a tracked task blocked, named in the kernel at every blocking sleep an
// analysis can use (rts_sleep_named, bpf/sleep_reason.bpf.h). trace names
// them.
const (
	SleepNone       = uint8(bpfRtsSleepReasonRTS_SR_NONE) // not classified (timer sleep, no walk)
	SleepWait       = uint8(bpfRtsSleepReasonRTS_SR_WAIT) // a primitive: never an event's reason
	SleepOther      = uint8(bpfRtsSleepReasonRTS_SR_OTHER)
	SleepPipeWrite  = uint8(bpfRtsSleepReasonRTS_SR_PIPE_WRITE)
	SleepPipeRead   = uint8(bpfRtsSleepReasonRTS_SR_PIPE_READ)
	SleepSockSend   = uint8(bpfRtsSleepReasonRTS_SR_SOCK_SEND)
	SleepSockRecv   = uint8(bpfRtsSleepReasonRTS_SR_SOCK_RECV)
	SleepSockOther  = uint8(bpfRtsSleepReasonRTS_SR_SOCK_OTHER)
	SleepFutex      = uint8(bpfRtsSleepReasonRTS_SR_FUTEX)
	SleepFutexPI    = uint8(bpfRtsSleepReasonRTS_SR_FUTEX_PI)
	SleepEpoll      = uint8(bpfRtsSleepReasonRTS_SR_EPOLL)
	SleepPoll       = uint8(bpfRtsSleepReasonRTS_SR_POLL)
	SleepNanosleep  = uint8(bpfRtsSleepReasonRTS_SR_NANOSLEEP)
	SleepIO         = uint8(bpfRtsSleepReasonRTS_SR_IO)
	SleepPageFault  = uint8(bpfRtsSleepReasonRTS_SR_PAGE_FAULT)
	SleepMutex      = uint8(bpfRtsSleepReasonRTS_SR_MUTEX)
	SleepRwsem      = uint8(bpfRtsSleepReasonRTS_SR_RWSEM)
	SleepEventfd    = uint8(bpfRtsSleepReasonRTS_SR_EVENTFD)
	SleepTimerfd    = uint8(bpfRtsSleepReasonRTS_SR_TIMERFD)
	SleepChild      = uint8(bpfRtsSleepReasonRTS_SR_CHILD)
	SleepSignal     = uint8(bpfRtsSleepReasonRTS_SR_SIGNAL)
	SleepTTY        = uint8(bpfRtsSleepReasonRTS_SR_TTY)
	SleepCompletion = uint8(bpfRtsSleepReasonRTS_SR_COMPLETION)
	SleepRTLock     = uint8(bpfRtsSleepReasonRTS_SR_RTLOCK)
	SleepIRQThread  = uint8(bpfRtsSleepReasonRTS_SR_IRQ_THREAD)
	// SleepReasonCount is the number of sleep reasons (RTS_SR_COUNT).
	SleepReasonCount = int(bpfRtsSleepReasonRTS_SR_COUNT)
)

// sleepFns maps kernel functions to the reason a sleep inside them has.
// The walk skips the frames up to the scheduling primitives (RTS_SR_WAIT)
// and takes the first function listed past them. Names are base names:
// compiler clones (".isra.0", ".constprop.0") are included. Functions a
// kernel lacks (renamed, inlined) are skipped: pipe_write became
// anon_pipe_write in 6.15, futex_wait_queue futex_do_wait.
var sleepFns = map[string]bpfRtsSleepReason{
	// Scheduling primitives and generic wait helpers: keep walking.
	"__schedule": bpfRtsSleepReasonRTS_SR_WAIT, "schedule": bpfRtsSleepReasonRTS_SR_WAIT,
	"schedule_timeout": bpfRtsSleepReasonRTS_SR_WAIT, "schedule_hrtimeout_range_clock": bpfRtsSleepReasonRTS_SR_WAIT,
	"schedule_hrtimeout_range": bpfRtsSleepReasonRTS_SR_WAIT, "schedule_hrtimeout": bpfRtsSleepReasonRTS_SR_WAIT,
	"schedule_preempt_disabled": bpfRtsSleepReasonRTS_SR_WAIT, "wait_woken": bpfRtsSleepReasonRTS_SR_WAIT,
	"do_wait_for_common": bpfRtsSleepReasonRTS_SR_WAIT, "__wait_for_common": bpfRtsSleepReasonRTS_SR_WAIT,
	"bit_wait": bpfRtsSleepReasonRTS_SR_WAIT, "__wait_on_bit": bpfRtsSleepReasonRTS_SR_WAIT,
	"__wait_on_bit_lock": bpfRtsSleepReasonRTS_SR_WAIT, "out_of_line_wait_on_bit": bpfRtsSleepReasonRTS_SR_WAIT,
	"rt_mutex_slowlock_block": bpfRtsSleepReasonRTS_SR_WAIT, "poll_schedule_timeout": bpfRtsSleepReasonRTS_SR_WAIT,
	"schedule_rtlock": bpfRtsSleepReasonRTS_SR_WAIT,

	"pipe_write": bpfRtsSleepReasonRTS_SR_PIPE_WRITE, "anon_pipe_write": bpfRtsSleepReasonRTS_SR_PIPE_WRITE,
	"fifo_pipe_write": bpfRtsSleepReasonRTS_SR_PIPE_WRITE, "pipe_wait_writable": bpfRtsSleepReasonRTS_SR_PIPE_WRITE,
	"pipe_read": bpfRtsSleepReasonRTS_SR_PIPE_READ, "anon_pipe_read": bpfRtsSleepReasonRTS_SR_PIPE_READ,
	"fifo_pipe_read": bpfRtsSleepReasonRTS_SR_PIPE_READ, "pipe_wait_readable": bpfRtsSleepReasonRTS_SR_PIPE_READ,

	"sk_stream_wait_memory": bpfRtsSleepReasonRTS_SR_SOCK_SEND, "sock_alloc_send_pskb": bpfRtsSleepReasonRTS_SR_SOCK_SEND,
	"sock_wait_for_wmem": bpfRtsSleepReasonRTS_SR_SOCK_SEND, "unix_wait_for_peer": bpfRtsSleepReasonRTS_SR_SOCK_SEND,
	"unix_stream_sendmsg": bpfRtsSleepReasonRTS_SR_SOCK_SEND, "unix_dgram_sendmsg": bpfRtsSleepReasonRTS_SR_SOCK_SEND,
	"tcp_sendmsg_locked": bpfRtsSleepReasonRTS_SR_SOCK_SEND, "udp_sendmsg": bpfRtsSleepReasonRTS_SR_SOCK_SEND,
	"unix_stream_data_wait": bpfRtsSleepReasonRTS_SR_SOCK_RECV, "unix_stream_read_generic": bpfRtsSleepReasonRTS_SR_SOCK_RECV,
	"__skb_wait_for_more_packets": bpfRtsSleepReasonRTS_SR_SOCK_RECV, "__skb_recv_datagram": bpfRtsSleepReasonRTS_SR_SOCK_RECV,
	"sk_wait_data": bpfRtsSleepReasonRTS_SR_SOCK_RECV, "tcp_recvmsg_locked": bpfRtsSleepReasonRTS_SR_SOCK_RECV,
	"udp_recvmsg": bpfRtsSleepReasonRTS_SR_SOCK_RECV, "unix_dgram_recvmsg": bpfRtsSleepReasonRTS_SR_SOCK_RECV,
	"inet_csk_accept": bpfRtsSleepReasonRTS_SR_SOCK_OTHER, "inet_csk_wait_for_connect": bpfRtsSleepReasonRTS_SR_SOCK_OTHER,
	"__inet_stream_connect": bpfRtsSleepReasonRTS_SR_SOCK_OTHER, "__lock_sock": bpfRtsSleepReasonRTS_SR_SOCK_OTHER,

	"futex_wait_queue": bpfRtsSleepReasonRTS_SR_FUTEX, "futex_do_wait": bpfRtsSleepReasonRTS_SR_FUTEX,
	"__futex_wait": bpfRtsSleepReasonRTS_SR_FUTEX, "futex_wait": bpfRtsSleepReasonRTS_SR_FUTEX,
	"futex_wait_multiple": bpfRtsSleepReasonRTS_SR_FUTEX, "futex_wait_requeue_pi": bpfRtsSleepReasonRTS_SR_FUTEX,
	"futex_lock_pi": bpfRtsSleepReasonRTS_SR_FUTEX_PI, "rt_mutex_wait_proxy_lock": bpfRtsSleepReasonRTS_SR_FUTEX_PI,

	"ep_poll": bpfRtsSleepReasonRTS_SR_EPOLL, "do_epoll_wait": bpfRtsSleepReasonRTS_SR_EPOLL,
	"do_sys_poll": bpfRtsSleepReasonRTS_SR_POLL, "do_select": bpfRtsSleepReasonRTS_SR_POLL,
	"core_sys_select": bpfRtsSleepReasonRTS_SR_POLL,
	"do_nanosleep":    bpfRtsSleepReasonRTS_SR_NANOSLEEP, "hrtimer_nanosleep": bpfRtsSleepReasonRTS_SR_NANOSLEEP,

	"io_schedule": bpfRtsSleepReasonRTS_SR_IO, "io_schedule_timeout": bpfRtsSleepReasonRTS_SR_IO,
	"bit_wait_io": bpfRtsSleepReasonRTS_SR_IO, "folio_wait_bit_common": bpfRtsSleepReasonRTS_SR_IO,
	"__folio_lock": bpfRtsSleepReasonRTS_SR_IO, "__folio_lock_killable": bpfRtsSleepReasonRTS_SR_IO,
	"folio_wait_writeback": bpfRtsSleepReasonRTS_SR_IO, "submit_bio_wait": bpfRtsSleepReasonRTS_SR_IO,
	"blk_mq_get_tag": bpfRtsSleepReasonRTS_SR_IO, "wait_for_completion_io": bpfRtsSleepReasonRTS_SR_IO,

	"handle_mm_fault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT, "do_user_addr_fault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT,
	"exc_page_fault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT, "filemap_fault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT,
	"__do_fault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT, "handle_userfault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT,
	"do_page_fault": bpfRtsSleepReasonRTS_SR_PAGE_FAULT, "do_mem_abort": bpfRtsSleepReasonRTS_SR_PAGE_FAULT,

	"__mutex_lock": bpfRtsSleepReasonRTS_SR_MUTEX, "__mutex_lock_slowpath": bpfRtsSleepReasonRTS_SR_MUTEX,
	"rt_mutex_slowlock": bpfRtsSleepReasonRTS_SR_MUTEX, "__rt_mutex_slowlock_locked": bpfRtsSleepReasonRTS_SR_MUTEX,
	"rwsem_down_read_slowpath": bpfRtsSleepReasonRTS_SR_RWSEM, "rwsem_down_write_slowpath": bpfRtsSleepReasonRTS_SR_RWSEM,
	"percpu_rwsem_wait": bpfRtsSleepReasonRTS_SR_RWSEM,

	"eventfd_read": bpfRtsSleepReasonRTS_SR_EVENTFD, "eventfd_write": bpfRtsSleepReasonRTS_SR_EVENTFD,
	"timerfd_read": bpfRtsSleepReasonRTS_SR_TIMERFD, "timerfd_read_iter": bpfRtsSleepReasonRTS_SR_TIMERFD,
	"do_wait": bpfRtsSleepReasonRTS_SR_CHILD, "kernel_wait4": bpfRtsSleepReasonRTS_SR_CHILD,
	"sigsuspend": bpfRtsSleepReasonRTS_SR_SIGNAL, "do_sigtimedwait": bpfRtsSleepReasonRTS_SR_SIGNAL,
	"__x64_sys_pause": bpfRtsSleepReasonRTS_SR_SIGNAL, "__arm64_sys_pause": bpfRtsSleepReasonRTS_SR_SIGNAL,
	"n_tty_read": bpfRtsSleepReasonRTS_SR_TTY, "n_tty_write": bpfRtsSleepReasonRTS_SR_TTY,
	"tty_wait_until_sent": bpfRtsSleepReasonRTS_SR_TTY,

	"wait_for_completion": bpfRtsSleepReasonRTS_SR_COMPLETION, "wait_for_completion_interruptible": bpfRtsSleepReasonRTS_SR_COMPLETION,
	"wait_for_completion_killable": bpfRtsSleepReasonRTS_SR_COMPLETION, "wait_for_completion_timeout": bpfRtsSleepReasonRTS_SR_COMPLETION,
	"wait_for_completion_state":                 bpfRtsSleepReasonRTS_SR_COMPLETION,
	"wait_for_completion_interruptible_timeout": bpfRtsSleepReasonRTS_SR_COMPLETION,
	"wait_for_completion_killable_timeout":      bpfRtsSleepReasonRTS_SR_COMPLETION,

	"rtlock_slowlock_locked": bpfRtsSleepReasonRTS_SR_RTLOCK, "rtlock_slowlock": bpfRtsSleepReasonRTS_SR_RTLOCK,
	"rt_spin_lock": bpfRtsSleepReasonRTS_SR_RTLOCK, "rt_read_lock": bpfRtsSleepReasonRTS_SR_RTLOCK,
	"rt_write_lock": bpfRtsSleepReasonRTS_SR_RTLOCK,
	"irq_thread":    bpfRtsSleepReasonRTS_SR_IRQ_THREAD,
}

// sleepTable is the sleep_fn table of the BPF object: the ranges of the
// listed kernel functions present in syms, sorted, at most RTS_SLEEP_FNS
// (the rest dropped, and counted in dropped). Empty without symbols
// (kptr_restrict): no sleep is then classified in the kernel.
type sleepTable struct {
	lo, hi  [bpfSleepFns]uint64
	class   [bpfSleepFns]uint8
	n       uint32
	dropped int
}

// bpfSleepFns is RTS_SLEEP_FNS, the capacity of the table in the object.
const bpfSleepFns = 128

func newSleepTable(syms *ksym.Table) *sleepTable {
	names := make(map[string]bool, len(sleepFns))
	for n := range sleepFns {
		names[n] = true
	}
	rs := syms.Ranges(names)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	t := &sleepTable{}
	for _, r := range rs {
		if int(t.n) == bpfSleepFns {
			t.dropped++
			continue
		}
		t.lo[t.n], t.hi[t.n], t.class[t.n] = r.Start, r.End, uint8(sleepFns[r.Name])
		t.n++
	}
	return t
}

// vars sets the table's variables of a BPF object.
func (t *sleepTable) vars(vars map[string]any) {
	vars["sleep_fn_count"] = t.n
	vars["sleep_fn_lo"] = t.lo
	vars["sleep_fn_hi"] = t.hi
	vars["sleep_fn_class"] = t.class
}

// describe says how sleeps are named with this table, for the JSON features.
func (t *sleepTable) describe() string {
	if t.n == 0 {
		return "from sampled sleep stacks only (at most one a ms per task): kernel symbols are hidden (kptr_restrict)"
	}
	s := fmt.Sprintf("every blocking sleep of a real-time task, one a ms of a task a timer releases or that arms its own sleeper timer (rts_sleep_named), in the kernel: %d frames walked, %d kernel function ranges known", sleepFrames, t.n)
	if t.dropped > 0 {
		s += fmt.Sprintf(" (%d more dropped: the table holds %d)", t.dropped, bpfSleepFns)
	}
	return s
}

// sleepFrames is RTS_SLEEP_FRAMES, the kernel frames walked per sleep.
const sleepFrames = 16
