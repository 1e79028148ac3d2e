# The rtscope binary of this tree runs in the guest: ./rtscope on amd64,
# ./rtscope-arm64 on arm64 (the host cannot run the latter, so only its
# output's form is checked; amd64 must match the host's run of the file).
# guests: rt std arm64
# timeout: 30
out=$(rtscope --version 2>&1)
full=$(rtscope version 2>&1)
echo "  guest: $out"
echo "  host:  $(cat /vmtest/host-version) (./rtscope)"
check "rtscope --version prints 'rtscope VERSION'" sh -c "echo '$out' | grep -Eqx 'rtscope [^ ]+'"
first=$(echo "$full" | head -1)
objects=$(echo "$full" | grep -c 'bpf.o')
check "rtscope version starts with it and lists the 8 BPF objects" [ "$first" = "$out" -a "$objects" = 8 ]
if [ "$GUEST" != arm64 ]; then
	check "it is the host's build" [ "$out" = "$(cat /vmtest/host-version)" ]
fi
finish
