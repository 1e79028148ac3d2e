package cli

import (
	"fmt"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/serve"
)

// serveConfigKey is one key of serve's configuration file: its path
// (a list item's keys after the list's, as targets.comm), its value, and
// what it does.
type serveConfigKey struct {
	path, value, doc string
}

// serveConfigKeys document serve.Config, key by key, for
// rtscope-serve.yaml(5); TestServeYAMLKeys checks that they are the yaml
// keys of serve.Config and serve.TargetConfig, no more and no fewer.
var serveConfigKeys = []serveConfigKey{
	{"listen", "ADDRESS:PORT", "where /metrics is served (default " + serve.DefaultListen +
		", localhost only); serve --listen wins over it."},
	{"archive", "DIRECTORY", "keep new worst cases and SLO-violation windows there, with their verdicts " +
		"(rtscope ctl windows); serve --archive wins over it. Empty or absent: no archive."},
	{"archive_max_mb", "MIB", fmt.Sprintf("size cap of the archive in MiB (default %d); the oldest windows "+
		"are removed. serve --archive-max-mb wins over it.", serve.DefaultArchiveBytes>>20)},
	{"targets", "LIST", "the targets to watch, each an item with exactly one of the keys below; they add to " +
		"serve's --comm, --pid, --tid and --cgroup."},
	{"targets.comm", "NAME", "every task with this name (1 to 15 characters, the kernel's limit), " +
		"including tasks that take it later."},
	{"targets.pid", "PID", "every thread of a process, including later ones."},
	{"targets.tid", "TID", "one thread."},
	{"targets.cgroup", "PATH|UNIT", "every task in a cgroup v2 (a path below /sys/fs/cgroup, or a systemd " +
		"unit name such as control.service) or below it, now and when it enters later."},
	{"slo", "LIST", "SLO bounds, each [ID:]METRIC=TIME as serve --slo (e.g. latency=200us, 1234:cycle=1ms); " +
		"without ID the bound is every task's. They add to --slo's."},
	{"intrusions", "CPUS|isolated", "count what intrudes on these CPUs (a list, 1,3-5; isolated: the isolated and " +
		"nohz_full ones) per CPU and cause on /metrics, as rtscope isolation does (its tracepoints are attached only then); " +
		"serve --intrusions wins over it. Read at start only: a reload does not attach or detach."},
	{"intrusions_allow", "LIST", "COMMs of the tasks that belong on the intrusions CPUs besides the targets' " +
		"(not counted as task intrusions); serve --intrusions-allow wins over it."},
}

const serveYAMLExample = `listen: 127.0.0.1:9717
archive: /var/lib/rtscope/windows
archive_max_mb: 64
targets:
  - comm: control
  - pid: 1234
  - cgroup: /system.slice/control.service
slo:
  - latency=200us
  - 1234:cycle=1ms`

// serveYAMLPage is rtscope-serve.yaml(5).
func serveYAMLPage() string {
	var b strings.Builder
	b.WriteString(".TH \"RTSCOPE\\-SERVE.YAML\" 5 \"\" \"rtscope\" \"rtscope manual\"\n")
	b.WriteString(".SH NAME\nrtscope\\-serve.yaml \\- configuration file of rtscope serve\n")
	b.WriteString(".SH SYNOPSIS\n\\fBrtscope serve \\-\\-config\\fR \\fIFILE\\fR\n.br\n/etc/rtscope/serve.yaml\n")
	b.WriteString(".SH DESCRIPTION\n" + roffText(`rtscope serve reads its targets, SLOs, /metrics address and archive from
the YAML file given with --config, combined with its flags: the targets and
SLOs of both are watched; for listen and the archive, a flag given wins.
Unknown keys are refused, each error naming the file and line.

The agent rereads the file on SIGHUP or 'rtscope ctl reload': the targets
and SLOs become those of the flags and the file as it is then; a file that
does not parse changes nothing. Times take a unit: us, ms, s.`))
	b.WriteString(".SH KEYS\n")
	for _, k := range serveConfigKeys {
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR: \\fI%s\\fR\n%s\n", roffEscape(k.path), roffEscape(k.value), roffEscape(k.doc))
	}
	b.WriteString(".PP\n" + roffText("METRIC is one of: "+strings.Join(metric.Names(), ", ")+"."))
	b.WriteString(".SH EXAMPLES\n.nf\n.RS 2\n" + roffLines(strings.Split(serveYAMLExample, "\n")) + ".RE\n.fi\n")
	b.WriteString(".SH SEE ALSO\n\\fBrtscope\\-serve\\fR(1),\n\\fBrtscope\\-ctl\\fR(1),\n\\fBrtscope\\fR(1)\n")
	return b.String()
}
