#!/usr/bin/env bash
# capture.sh LOG DIR: write each "VMTEST-CAPTURE NAME DATA" line of a
# vmtest log (printed by the guest's `capture` helper when the guest booted
# with VMTEST_APPEND=vmtest.capture) to DIR/GUEST-NAME.json. The analysis
# fixtures of internal/analysis/testdata/windows are made from these.
set -euo pipefail
[ $# -eq 2 ] || {
	echo "usage: $0 LOG DIR" >&2
	exit 2
}
mkdir -p "$2"
n=0
while read -r guest _ name data; do
	guest=${guest#[}
	guest=${guest%]}
	printf '%s' "$data" | base64 -d | gunzip >"$2/$guest-$name.json"
	n=$((n + 1))
done < <(grep -a 'VMTEST-CAPTURE ' "$1" | sed 's/^\(\[[^]]*\]\) *VMTEST-CAPTURE /\1 VMTEST-CAPTURE /' | tr -d '\r')
echo "$n captures written to $2"
