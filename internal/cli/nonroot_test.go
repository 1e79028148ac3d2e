package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mainArgsEnv carries the arguments of a child run of this test binary
// that runs Main instead of the tests (see TestMain).
const mainArgsEnv = "RTSCOPE_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(mainArgsEnv); ok {
		args := os.Args[1:] // "-": this binary is rtscope, as a shell calls it
		if v != "-" {
			if err := json.Unmarshal([]byte(v), &args); err != nil {
				os.Exit(100)
			}
		}
		os.Exit(Main(args))
	}
	os.Exit(m.Run())
}

// asRtscope copies this test binary to dir/rtscope, which runs as rtscope
// (Main with its arguments) while mainArgsEnv is "-".
func asRtscope(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "rtscope")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// asNobody runs rtscope (Main, in a copy of this test binary) with args as
// the user nobody, and returns its exit status and stderr.
func asNobody(t *testing.T, args ...string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root to run as another user (CI runs as root)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rtscope-cli-") // t.TempDir's parent is root's only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "rtscope")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(args)
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+string(a))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Run as a user other than root, serve says what watch says (root, or
// CAP_BPF and CAP_PERFMON), not "bind: permission denied".
func TestServeAsUserNamesRoot(t *testing.T) {
	code, stderr := asNobody(t, "serve", "--comm", "control")
	if code != 1 || !strings.HasPrefix(stderr, "rtscope serve: ") || !strings.Contains(stderr, "needs root, or the CAP_BPF and CAP_PERFMON") ||
		strings.Contains(stderr, "permission denied") {
		t.Errorf("serve as nobody: status %d, stderr %q", code, stderr)
	}
	_, watchErr := asNobody(t, "watch", "--comm", "control", "-d", "1s")
	if _, sentence, _ := strings.Cut(watchErr, ": "); !strings.Contains(stderr, strings.TrimSpace(sentence)) {
		t.Errorf("serve %q and watch %q give different sentences", stderr, watchErr)
	}
}

// ctl run as a user other than root, with an agent listening on a socket
// only root may use, says to run it as root, not "no agent".
func TestCtlAsUserNamesRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root)")
	}
	dir, err := os.MkdirTemp("", "rtscope-sock-") // 0700, root's: as /run/rtscope
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "serve.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, stderr := asNobody(t, "ctl", "--socket", sock, "list")
	if code != 1 || !strings.HasPrefix(stderr, "rtscope ctl: ") || !strings.Contains(stderr, "run rtscope ctl as root") ||
		strings.Contains(stderr, "no agent") {
		t.Errorf("ctl as nobody: status %d, stderr %q", code, stderr)
	}
}

// doctor run as a user other than root does not call tracefs missing
// where it is mounted, root's only.
func TestDoctorAsUserSeesTracefs(t *testing.T) {
	fi, err := os.Stat("/sys/kernel/tracing/events")
	if err != nil || !fi.IsDir() {
		missing(t, "no tracefs here")
	}
	st, err := os.Stat("/sys/kernel/tracing")
	if err != nil || st.Mode().Perm()&0o005 != 0 {
		missing(t, "tracefs is readable by others here: the 0700 case cannot be tried")
	}
	_, stderr := asNobody(t, "doctor", "--sample", "0", "--bpf=false", "--json", "-")
	_ = stderr // the text report goes to stderr with --json -
	if strings.Contains(stderr, "tracefs missing") || !strings.Contains(stderr, "tracefs present but not readable") {
		t.Errorf("doctor as nobody: %q", grepLine(stderr, "tracefs"))
	}
}

func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// scenario run as a user other than root says it needs root, not which
// file it could not open; scenario list needs nothing.
func TestScenarioAsUserNamesRoot(t *testing.T) {
	code, stderr := asNobody(t, "scenario", "run", "healthy-loop", "--duration", "1s")
	if code != 1 || !strings.HasPrefix(stderr, "rtscope scenario run: scenarios need root") || strings.Contains(stderr, "permission denied") {
		t.Errorf("scenario run as nobody: status %d, stderr %q", code, stderr)
	}
	if code, stderr := asNobody(t, "scenario", "list"); code != 0 || stderr != "" {
		t.Errorf("scenario list as nobody: status %d, stderr %q", code, stderr)
	}
}

// missing fails a test whose tool or setting this machine lacks: make test
// installs and sets them, and a test that did not run is no passing test.
func missing(t *testing.T, why string) {
	t.Helper()
	t.Fatal(why + " (make test installs or sets it)")
}
