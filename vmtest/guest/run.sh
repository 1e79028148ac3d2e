# Guest test runner: runs the tests the host chose for this boot ($3, a
# comma-separated list of /vmtest/tests/NAME.sh), each under its
# "# timeout:" (seconds), and prints one machine-readable line per test for
# the host:
#   VMTEST PASS name | VMTEST FAIL name: why | VMTEST SKIP name: why
# then "VMTEST DONE". Tests print readable details as they go.
guest=$1
tcg=$2
tests=$3
echo "vmtest guest $guest (TCG $tcg): $(uname -r) $(uname -m), $(nproc) CPUs, $(uname -v)"
for name in $(echo "$tests" | tr , ' '); do
	t=/vmtest/tests/$name.sh
	tmo=$(sed -n 's/^# timeout: *//p' "$t")
	echo "=== $name"
	rm -f /tmp/vmtest-skip
	start=$(cut -d' ' -f1 /proc/uptime)
	GUEST=$guest TEST=$name timeout "${tmo:-60}" sh -c ". /vmtest/lib.sh; . $t"
	rc=$?
	end=$(cut -d' ' -f1 /proc/uptime)
	took=$(awk "BEGIN{printf \"%.1f\", $end - $start}")
	case $rc in
	0) echo "VMTEST PASS $name" ;;
	77) echo "VMTEST SKIP $name: $(cat /tmp/vmtest-skip 2>/dev/null)" ;;
	143 | 124) echo "VMTEST FAIL $name: timed out after ${tmo:-60}s" ;;
	*) echo "VMTEST FAIL $name: exit status $rc" ;;
	esac
	echo "--- $name ${took}s (guest clock)"
done
echo "--- kernel warnings during the run:"
dmesg | grep -E -A20 'WARNING:|BUG:|Oops|Call Trace|rcu.*stall|soft lockup|hung task' | head -80
echo "VMTEST DONE"
