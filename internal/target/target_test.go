package target

import (
	"os"
	"strings"
	"testing"
)

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{}, "nothing to watch"},
		{Spec{TIDs: []int{0}}, "idle task"},
		{Spec{TIDs: []int{-4}}, "negative"},
		{Spec{PIDs: []int{0}}, "idle task"},
		{Spec{TIDs: []int{1 << 30}}, "does not exist"},
		{Spec{PIDs: []int{1 << 30}}, "does not exist"},
		{Spec{Comms: []string{"a-very-long-task-name"}}, "longer than the kernel keeps"},
		{Spec{Command: []string{"/nonexistent/prog"}}, "cannot execute"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.spec, err, c.want)
		}
	}
	if err := (Spec{TIDs: []int{os.Getpid()}, Comms: []string{"x"}}).Validate(); err != nil {
		t.Errorf("valid spec refused: %v", err)
	}
}

func TestLaunchStopsBeforeFirstInstruction(t *testing.T) {
	dir := t.TempDir()
	marker := dir + "/ran"
	l, err := Launch([]string{"sh", "-c", "touch " + marker}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Stopped at exec: nothing has run yet.
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("command ran before Resume")
	}
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := l.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("command did not run after Resume")
	}
}
