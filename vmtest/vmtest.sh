#!/usr/bin/env bash
# QEMU test bed for rtscope (see vmtest/README.md).
#
# Boots Debian's kernels under TCG with a busybox initramfs that carries
# rtscope, the guest tests (vmtest/guest), cyclictest, rtla and the
# fault-injection modules (vmtest/modules), and turns the guests'
# "VMTEST PASS|FAIL|SKIP name" lines into an exit status.
#
# Usage: vmtest/vmtest.sh [GUEST...]     GUEST: rt std arm64 (default: all)
# Environment:
#   VMTEST_CACHE   cache directory (default .cache/vmtest)
#   VMTEST_ONLY    run only the guest tests whose name matches this ERE
#   VMTEST_STRICT  1: a skipped test fails the run
#   VMTEST_QEMU_ARGS  extra QEMU arguments
#   VMTEST_APPEND  extra kernel command line
#
# Needs root (apt-get, mknod for /dev/console in the initramfs) and the
# binaries of `make build` and `make build GOARCH=arm64` (./rtscope,
# ./rtscope-arm64): `make vmtest` builds them first.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VMTEST_CACHE:-$ROOT/.cache/vmtest}
GUESTS=("$@")
[ ${#GUESTS[@]} -gt 0 ] || GUESTS=(rt std arm64)

log() { echo "vmtest: $*" >&2; }
die() {
	echo "vmtest: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- host tools

APT_UPDATED=
apt_update() {
	[ -n "$APT_UPDATED" ] && return 0
	log "apt-get update"
	apt-get update -qq >/dev/null
	APT_UPDATED=1
}

# apt_install PKG...: install the packages that are missing.
apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	apt_update
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

host_tools() {
	local pkgs=(cpio busybox-static rt-tests rtla make libelf1 socat)
	local g
	for g in "${GUESTS[@]}"; do
		case $g in
		rt | std) pkgs+=(qemu-system-x86) ;;
		arm64) pkgs+=(qemu-system-arm) ;;
		*) die "unknown guest \"$g\" (use rt, std or arm64)" ;;
		esac
	done
	apt_install "${pkgs[@]}"
	if [[ " ${GUESTS[*]} " == *" arm64 "* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
		log "adding the arm64 architecture to dpkg (for arm64 kernel and busybox packages)"
		dpkg --add-architecture arm64
		APT_UPDATED=
		apt_update
	fi
}

# ------------------------------------------------------------ Debian packages

# pkg_field PKG FIELD: a field of the candidate version of PKG.
pkg_field() {
	apt-cache show --no-all-versions "$1" 2>/dev/null | awk -v f="$2:" '$1 == f {print $2; exit}'
}

# resolve META: the versioned package a metapackage depends on today
# (linux-image-rt-amd64 -> linux-image-6.1.0-NN-rt-amd64). No version is
# hard-coded: Debian replaces the ABI number with every point release.
resolve() {
	local dep
	dep=$(apt-cache depends "$1" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-/ {print $2; exit}')
	if [ -z "$dep" ]; then
		apt_update
		dep=$(apt-cache depends "$1" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-/ {print $2; exit}')
	fi
	[ -n "$dep" ] || die "apt-cache cannot resolve $1"
	echo "$dep"
}

# fetch PKG[:ARCH]: download the candidate .deb into the cache (once) and
# print its path.
fetch() {
	local pkg=$1 name=${1%%:*} ver arch file
	ver=$(pkg_field "$pkg" Version)
	if [ -z "$ver" ]; then
		apt_update
		ver=$(pkg_field "$pkg" Version)
	fi
	[ -n "$ver" ] || die "no Debian package $pkg"
	arch=$(pkg_field "$pkg" Architecture)
	file=$CACHE/debs/${name}_${ver//:/%3a}_$arch.deb
	if [ ! -s "$file" ]; then
		mkdir -p "$CACHE/debs"
		log "downloading $pkg $ver"
		(cd "$CACHE/debs" && apt-get download -qq -o APT::Sandbox::User=root "$pkg=$ver" >/dev/null)
		[ -s "$file" ] || die "apt-get download $pkg=$ver did not produce $file"
	fi
	echo "$file"
}

# extract DEB DIR [PATH...]: unpack (part of) a .deb once.
extract() {
	local deb=$1 dir=$2
	shift 2
	[ -e "$dir/.done-$(basename "$deb")" ] && return 0
	mkdir -p "$dir"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" "$@"
	touch "$dir/.done-$(basename "$deb")"
}

# kernel GUEST: sets KVER, KDIR (cache dir of that kernel) and VMLINUZ.
kernel() {
	local meta pkg
	case $1 in
	rt) meta=linux-image-rt-amd64 ;;
	std) meta=linux-image-amd64 ;;
	arm64) meta=linux-image-arm64:arm64 ;;
	esac
	pkg=$(resolve "$meta")
	KVER=${pkg#linux-image-}
	KVER=${KVER%:*}
	KDIR=$CACHE/kernels/$KVER
	extract "$(fetch "$pkg")" "$KDIR" ./boot
	VMLINUZ=$KDIR/boot/vmlinuz-$KVER
	[ -s "$VMLINUZ" ] || die "no kernel image in $pkg"
}

# headers GUEST: unpack linux-headers for KVER with everything it needs
# (the common headers and linux-kbuild) into one tree and point its
# Makefile at that tree instead of /usr/src. Sets HDR.
headers() {
	local meta pkg dep tree
	case $1 in
	rt) meta=linux-headers-rt-amd64 ;;
	std) meta=linux-headers-amd64 ;;
	esac
	pkg=$(resolve "$meta")
	[ "$pkg" = "linux-headers-$KVER" ] || die "$meta is at $pkg but $1 boots $KVER"
	tree=$KDIR/headers
	extract "$(fetch "$pkg")" "$tree"
	for dep in $(apt-cache depends "$pkg" | awk '$1 == "Depends:" && $2 ~ /^linux-(headers|kbuild)-/ {print $2}'); do
		extract "$(fetch "$dep")" "$tree"
	done
	HDR=$tree/usr/src/linux-headers-$KVER
	sed -i "s#^include /usr/src/#include $tree/usr/src/#" "$HDR/Makefile"
	# The compiler Debian built the kernel with (CC = ... gcc-12).
	local cc
	cc=$(sed -n 's/^CC = .*\(gcc-[0-9]*\)$/\1/p' "$HDR/.kernelvariables")
	[ -n "$cc" ] && apt_install "$cc"
	return 0
}

# modules GUEST: build vmtest/modules against the guest's headers, cached by
# kernel and source hash. Sets MODS (directory of the .ko files).
modules() {
	headers "$1"
	local hash build
	hash=$(cat "$ROOT"/vmtest/modules/* | sha256sum | cut -c1-12)
	MODS=$CACHE/modules/$KVER-$hash
	[ -e "$MODS/.done" ] && return 0
	build=$CACHE/modules/build-$KVER
	rm -rf "$build" "$MODS"
	mkdir -p "$build" "$MODS"
	cp "$ROOT"/vmtest/modules/* "$build/"
	log "building fault-injection modules for $KVER"
	make -s -C "$HDR" M="$build" modules >"$build/build.log" 2>&1 || {
		cat "$build/build.log" >&2
		die "module build failed"
	}
	if grep -E 'warning:|error:' "$build/build.log" >&2; then
		die "module build has warnings"
	fi
	cp "$build"/*.ko "$MODS/"
	touch "$MODS/.done"
}

# ------------------------------------------------------------------ initramfs

# copy_with_libs BIN STAGE: a dynamically linked host binary and the shared
# libraries ldd names, at the same paths (amd64 guests only).
copy_with_libs() {
	local bin=$1 stage=$2 lib
	install -D -m 755 "$bin" "$stage$bin"
	for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
		[ -e "$stage$lib" ] || install -D -m 755 "$(readlink -f "$lib")" "$stage$lib"
	done
}

# initramfs GUEST ARCH: build $RUN/initramfs-GUEST.cpio.gz. Sets INITRD.
initramfs() {
	local guest=$1 arch=$2 stage bin busybox
	stage=$RUN/stage-$guest
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,dev,proc,sys,tmp,usr/bin,lib/modules,vmtest}
	if [ "$arch" = arm64 ]; then
		bin=$ROOT/rtscope-arm64
		busybox=$CACHE/busybox-arm64/bin/busybox
	else
		bin=$ROOT/rtscope
		busybox=/bin/busybox
		copy_with_libs "$(command -v cyclictest)" "$stage"
		copy_with_libs "$(command -v rtla)" "$stage"
	fi
	[ -x "$bin" ] || die "$bin is missing: run make build${arch:+ GOARCH=$arch} first"
	install -m 755 "$busybox" "$stage/bin/busybox"
	install -m 755 "$bin" "$stage/bin/rtscope"
	install -m 755 "$RUN/vmkit-$arch" "$stage/bin/vmkit"
	install -m 755 "$RUN/scenario.test-$arch" "$stage/bin/scenario.test"
	if [ -n "${MODS:-}" ]; then
		cp "$MODS"/*.ko "$stage/lib/modules/"
	fi
	cp -r "$ROOT"/vmtest/guest/. "$stage/vmtest/"
	mv "$stage/vmtest/init" "$stage/init"
	chmod 755 "$stage/init"
	# What the guest's rtscope must report (same tree, same build).
	"$ROOT/rtscope" --version >"$stage/vmtest/host-version"
	mknod -m 600 "$stage/dev/console" c 5 1
	mknod -m 666 "$stage/dev/null" c 1 3
	INITRD=$RUN/initramfs-$guest.cpio.gz
	(cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$INITRD"
	rm -rf "$stage"
}

vmkit() {
	local arch
	for arch in amd64 arm64; do
		(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -o "$RUN/vmkit-$arch" ./vmtest/cmd/vmkit)
		# The scenario signature tests, run as they are on the host.
		(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go test -c -trimpath -o "$RUN/scenario.test-$arch" ./internal/scenario)
	done
}

# ------------------------------------------------------------------- booting

# tests_for GUEST TCG CPUS [APPEND]: names of the guest tests that run on
# GUEST in a boot with TCG mode TCG ("# tcg:" line of the test, single by
# default), CPUS vCPUs ("# cpus:" line, 2 by default) and the kernel
# arguments APPEND ("# append:" line, none by default), in order.
tests_for() {
	local t mode cpus
	for t in "$ROOT"/vmtest/guest/tests/*.sh; do
		grep -Eq "^# guests:.* $1( |\$)" "$t" || continue
		mode=$(sed -n 's/^# tcg: *//p' "$t")
		[ "${mode:-single}" = "$2" ] || continue
		cpus=$(sed -n 's/^# cpus: *//p' "$t")
		[ "${cpus:-2}" = "$3" ] || continue
		[ "$(test_append "$t")" = "${4:-}" ] || continue
		t=$(basename "$t" .sh)
		if [ -n "${VMTEST_ONLY:-}" ] && ! [[ $t =~ $VMTEST_ONLY ]]; then
			continue
		fi
		echo "$t"
	done
}

# test_append FILE: the kernel arguments a guest test boots with (its
# "# append:" line, e.g. isolcpus= and nohz_full=, which only a boot can
# set): tests with the same arguments share a boot.
test_append() { sed -n 's/^# append: *//p' "$1" | head -1; }

# appends_for GUEST: the distinct "# append:" lines of GUEST's tests, one
# a line, "-" for the tests without one.
appends_for() {
	local t a
	for t in "$ROOT"/vmtest/guest/tests/*.sh; do
		grep -Eq "^# guests:.* $1( |\$)" "$t" || continue
		a=$(test_append "$t")
		echo "${a:--}"
	done | sort -u
}

# budget TESTS...: boot timeout in seconds, from the tests' "# timeout:"
# lines (guest seconds; a loaded host runs the guest slower than the wall clock).
budget() {
	local t sum=0 n
	for t in "$@"; do
		n=$(sed -n 's/^# timeout: *//p' "$ROOT/vmtest/guest/tests/$t.sh")
		sum=$((sum + ${n:-60}))
	done
	echo $((120 + sum * 3 / 2))
}

# silence TEST...: seconds without a line from the guest after which it is
# hung (the guest enforces each test's timeout itself, so a live guest
# prints within its longest test's budget): 1.5 times the longest timeout,
# plus a minute. VMTEST_SILENCE overrides it.
silence() {
	local t n most=60
	for t in "$@"; do
		n=$(sed -n 's/^# timeout: *//p' "$ROOT/vmtest/guest/tests/$t.sh")
		[ "${n:-60}" -gt "$most" ] && most=${n:-60}
	done
	echo "${VMTEST_SILENCE:-$((60 + most * 3 / 2))}"
}

# vcpu_state MONITOR: where the vCPUs of a hung guest are, read three
# times a second apart through the QEMU monitor socket (a vCPU at the same
# kernel address every time is looping there, as the MTTCG int3 loop was
# found; the guest boots with nokaslr, so the addresses can be looked up in
# the System.map of the kernel's -dbg package), then the guest's own
# backtraces: SysRq 9 (print everything), l (every active CPU) and w
# (blocked tasks) sent as keys.
vcpu_state() {
	local i rip n where
	for i in 1 2 3; do
		n=0
		for rip in $(echo "info registers -a" | socat -t 2 - "UNIX-CONNECT:$1" 2>/dev/null | tr -d '\r' | sed -n 's/^RIP=\([0-9a-f]*\).*/\1/p'); do
			case $rip in [0-7]*) where="user space" ;; *) where=kernel ;; esac
			echo "vCPU $n at $rip ($where)"
			n=$((n + 1))
		done
		[ $n -gt 0 ] || echo "no answer from the QEMU monitor"
		sleep 1
	done
	printf 'sendkey alt-sysrq-9\nsendkey alt-sysrq-l\nsendkey alt-sysrq-w\n' | socat -t 2 - "UNIX-CONNECT:$1" >/dev/null 2>&1
	sleep 20
}

# watchdog LOG PIDFILE SECONDS MONITOR: stops the guest whose pid is in
# PIDFILE when LOG has not grown for SECONDS, and leaves LOG.hung saying so,
# after printing where its vCPUs were (MONITOR: its QEMU monitor socket).
watchdog() {
	local size last=-1 idle=0
	while sleep 5; do
		[ -s "$2" ] || continue
		kill -0 "$(cat "$2")" 2>/dev/null || return 0
		size=$(stat -c %s "$1" 2>/dev/null || echo 0)
		if [ "$size" = "$last" ]; then idle=$((idle + 5)); else idle=0 last=$size; fi
		if [ $idle -ge "$3" ]; then
			vcpu_state "$4" | sed 's/^/vmtest: hung guest: /' >&2
			echo "no output for ${3}s" >"$1.hung"
			kill "$(cat "$2")" 2>/dev/null
			sleep 5
			kill -9 "$(cat "$2")" 2>/dev/null
			return 0
		fi
	done
}

RESULTS=()
FAILED_CHECKS=()

# test_section LOG TEST: the lines a guest test printed.
test_section() {
	awk -v t="$2" '$0 == "=== " t { on = 1 } on { print } on && $0 ~ "^--- " t " " { exit }' "$1"
}

# boot GUEST TCG CPUS APPEND: boot GUEST with TCG threading TCG, CPUS vCPUs
# and the tests' kernel arguments APPEND ("-": none; the boot is named after
# the first argument, e.g. rt-isolcpus).
# Tests run under single-threaded TCG unless they say "# tcg: multi" (a
# host thread per vCPU): with MTTCG, live kernel text patching (BPF
# attach/detach, rtla enabling its tracer, insmod) sometimes left both
# vCPUs looping forever on a stale int3 (try_to_wake_up+0x9e, seen with
# the QEMU monitor; QEMU 7.2). Single-threaded TCG runs the vCPUs in turn
# and switches away from a busy one only every 100 ms (its kick timer):
# while one vCPU spins, the other's interrupts wait up to that long.
# Tests whose worst case must be the injected one say "# cpus: 1".
# A guest that hangs (TCG: an emulated PREEMPT_RT guest once printed
# nothing for 15 minutes at the start of a test) is stopped by a watchdog
# and booted once more for the tests that have no result (RETRY: the tests,
# on that second boot).
boot() {
	local guest=$1 tcg=$2 cpus=$3 args=${4#-} retry=${5:-} name=$1 arch=amd64 qemu append logf tmo start rc t tests wd left
	tests=${retry:-$(tests_for "$guest" "$tcg" "$cpus" "$args")}
	[ "$tcg" = multi ] && name=$name-multi
	[ "$cpus" = 2 ] || name=$name-${cpus}cpu
	[ -z "$args" ] || name=$name-${args%%[= ]*}
	[ -z "$retry" ] || name=$name-retry
	[ "$guest" = arm64 ] && arch=arm64
	# The cache is shared with concurrent runs (several `make test` of the
	# same checkout): downloads, unpacking and module builds under a lock.
	flock 9
	kernel "$guest"
	MODS=
	if [ "$arch" = amd64 ]; then
		modules "$guest"
	else
		extract "$(fetch busybox-static:arm64)" "$CACHE/busybox-arm64" ./bin/busybox
	fi
	flock -u 9
	initramfs "$guest" "$arch"
	# loglevel=5: kernel warnings (KERN_WARNING, level 4) reach the console.
	# An rt guest died of "kernel BUG at mm/vmalloc.c:2554" (in_interrupt()
	# in a clone) with the taint of an earlier WARN that loglevel=4 hid.
	append="quiet loglevel=5 panic=-1 rdinit=/init vmtest.guest=$guest vmtest.tcg=$tcg vmtest.tests=$(echo $tests | tr ' ' ,) $args ${VMTEST_APPEND:-}"
	if [ "$arch" = arm64 ]; then
		qemu=(qemu-system-aarch64 -M virt -cpu cortex-a72)
		append="console=ttyAMA0 $append"
	else
		qemu=(qemu-system-x86_64 -cpu max)
		# nokaslr: a hung guest's vCPU addresses can be looked up offline.
		append="console=ttyS0 nokaslr $append"
	fi
	qemu+=(-accel "tcg,thread=$tcg" -smp "$cpus" -m 1024 -nodefaults -nographic -no-reboot -serial stdio
		-kernel "$VMLINUZ" -initrd "$INITRD" -append "$append")
	# shellcheck disable=SC2206 # word splitting wanted
	qemu+=(${VMTEST_QEMU_ARGS:-})
	logf=$RUN/$name.log
	qemu+=(-pidfile "$RUN/$name.pid" -monitor "unix:$RUN/$name.mon,server,nowait")
	# shellcheck disable=SC2086 # one test name per word
	tmo=$(budget $tests)
	log "booting $name ($KVER, TCG $tcg, $cpus vCPUs, timeout ${tmo}s, log $CACHE/logs/$name.log)"
	start=$SECONDS
	rm -f "$RUN/$name.pid" "$logf.hung"
	# shellcheck disable=SC2086 # one test name per word
	watchdog "$logf" "$RUN/$name.pid" "$(silence $tests)" "$RUN/$name.mon" &
	wd=$!
	set +e
	timeout -k 10 "$tmo" "${qemu[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$logf" | sed -u "s/^/[$name] /"
	rc=${PIPESTATUS[0]}
	set -e
	kill $wd 2>/dev/null || true
	wait $wd 2>/dev/null || true
	log "$name ran $((SECONDS - start))s"
	if grep -q '^VMTEST DONE' "$logf"; then
		:
	elif [ -s "$logf.hung" ]; then
		left=
		for t in $tests; do
			grep -q "^VMTEST \(PASS\|SKIP\|FAIL\) $t\b" "$logf" || left="$left $t"
		done
		if [ -z "$retry" ] && [ -n "$left" ]; then
			log "$name hung ($(cat "$logf.hung")) with no result for:$left; booting it once more for those"
			RESULTS+=("NOTE $name hung ($(cat "$logf.hung")) in$left: booted once more for them")
			tests=$(comm -23 <(printf '%s\n' $tests | sort) <(printf '%s\n' $left | sort) | tr '\n' ' ')
			record "$guest" "$logf" $tests
			boot "$guest" "$tcg" "$cpus" "${args:--}" "${left# }"
			return
		fi
		RESULTS+=("FAIL $name: the guest hung ($(cat "$logf.hung")), twice")
	elif [ "$rc" = 124 ]; then
		RESULTS+=("FAIL $name: timed out after ${tmo}s")
	else
		RESULTS+=("FAIL $name: the guest stopped before the end of its tests (qemu status $rc)")
	fi
	# shellcheck disable=SC2086 # one test name per word
	record "$guest" "$logf" $tests
}

# record GUEST LOG TEST...: the results of TESTs in a guest's LOG.
record() {
	local guest=$1 logf=$2 t
	shift 2
	for t in "$@"; do
		if grep -q "^VMTEST PASS $t\$" "$logf"; then
			RESULTS+=("PASS $guest/$t")
		elif grep -q "^VMTEST SKIP $t" "$logf"; then
			RESULTS+=("SKIP $guest/$t:$(sed -n "s/^VMTEST SKIP $t:\?//p" "$logf" | head -1)")
		elif grep -q "^VMTEST FAIL $t" "$logf"; then
			RESULTS+=("FAIL $guest/$t:$(sed -n "s/^VMTEST FAIL $t:\?//p" "$logf" | head -1)")
			# The failed checks, for the summary: CI logs are often read
			# from the end.
			FAILED_CHECKS+=("$guest/$t:" "$(test_section "$logf" "$t" | grep -E '^  FAIL ' | head -8)")
		else
			RESULTS+=("FAIL $guest/$t: no result")
		fi
	done
}

# ----------------------------------------------------------------------- main

[ "$(id -u)" = 0 ] || die "needs root (apt-get, mknod)"
T0=$SECONDS
mkdir -p "$CACHE/logs"
exec 9>"$CACHE/.lock"
RUN=$(mktemp -d "$CACHE/run.XXXXXX")
# Logs of the last run stay in $CACHE/logs; the run's other files go.
trap 'cp "$RUN"/*.log "$CACHE/logs/" 2>/dev/null; rm -rf "$RUN"' EXIT
trap 'exit 143' TERM INT
flock 9
host_tools
flock -u 9
vmkit
for g in "${GUESTS[@]}"; do
	mapfile -t appends < <(appends_for "$g")
	for tcg in multi single; do
		for cpus in 2 1; do
			for args in "${appends[@]}"; do
				if [ -n "$(tests_for "$g" $tcg $cpus "${args#-}")" ]; then
					boot "$g" $tcg $cpus "$args"
				fi
			done
		done
	done
done

echo
echo "vmtest summary ($((SECONDS - T0))s):"
fail=0
for r in "${RESULTS[@]}"; do
	echo "  $r"
	case $r in
	FAIL*) fail=1 ;;
	SKIP*) [ "${VMTEST_STRICT:-0}" = 1 ] && fail=1 ;;
	esac
done
if [ ${#FAILED_CHECKS[@]} -gt 0 ]; then
	echo "failed checks:"
	printf '  %s\n' "${FAILED_CHECKS[@]}"
fi
if [ $fail = 1 ]; then
	echo "vmtest: FAILED (guest logs in $CACHE/logs)"
	exit 1
fi
echo "vmtest: ok"
