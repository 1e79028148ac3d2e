package tpformat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The formats captured from a 6.18 x86-64 host (testdata/*.format): the
// offsets the classic engine relies on, as the kernel printed them.
func TestParseCaptured(t *testing.T) {
	want := map[string]map[string]Field{
		"sched_switch": {
			"prev_pid":   {Type: "pid_t", Name: "prev_pid", Offset: 24, Size: 4, Signed: true},
			"prev_state": {Type: "long", Name: "prev_state", Offset: 32, Size: 8, Signed: true},
			"next_comm":  {Type: "char[16]", Name: "next_comm", Offset: 40, Size: 16},
			"next_prio":  {Type: "int", Name: "next_prio", Offset: 60, Size: 4, Signed: true},
		},
		"hrtimer_start": {
			"hrtimer":     {Type: "void *", Name: "hrtimer", Offset: 8, Size: 8},
			"softexpires": {Type: "s64", Name: "softexpires", Offset: 32, Size: 8, Signed: true},
			"mode":        {Type: "enum hrtimer_mode", Name: "mode", Offset: 40, Size: 4},
		},
		"sched_migrate_task": {
			"comm":     {Type: "__data_loc char[]", Name: "comm", Offset: 8, Size: 4, DataLoc: true},
			"dest_cpu": {Type: "int", Name: "dest_cpu", Offset: 24, Size: 4, Signed: true},
		},
		"task_newtask": {
			"clone_flags": {Type: "u64", Name: "clone_flags", Offset: 32, Size: 8},
		},
	}
	for event, fields := range want {
		b, err := os.ReadFile(filepath.Join("testdata", event+".format"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFormat(string(b))
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		if f.Name != event || f.ID == 0 {
			t.Errorf("%s: name %q id %d", event, f.Name, f.ID)
		}
		for name, w := range fields {
			if got := f.Fields[name]; got != w {
				t.Errorf("%s.%s = %+v, want %+v", event, name, got, w)
			}
		}
		if c := f.Fields["common_pid"]; c.Offset != 4 || c.Size != 4 {
			t.Errorf("%s: common_pid %+v", event, c)
		}
	}
}

// Every captured format parses, with each field inside the record.
func TestParseAllCaptured(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.format")
	if len(files) < 10 {
		t.Fatalf("only %d captured formats", len(files))
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f, err := ParseFormat(string(b))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, fd := range f.Fields {
			if fd.Size == 0 || fd.Offset+fd.Size > 4096 {
				t.Errorf("%s: field %+v", p, fd)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, text := range []string{
		"",
		"name: x\nID: 1\nformat:\n",
		"ID: nope\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n",
		"\tfield:int a;\toffset:x;\tsize:4;\tsigned:1;\n",
		"\tfield:int a;\tsize:4;\tsigned:1;\n",
		"\tfield:;\toffset:8;\tsize:4;\tsigned:1;\n",
	} {
		if _, err := ParseFormat(text); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
}

// The live kernel's formats parse too (CI has tracefs: its absence fails).
func TestReadLive(t *testing.T) {
	f, err := ReadFormat("sched", "sched_switch")
	if err != nil {
		t.Fatalf("reading the live kernel's sched_switch format: %v", err)
	}
	if _, ok := f.Fields["next_pid"]; !ok {
		t.Errorf("no next_pid in %+v", f.Fields)
	}
	if _, err := ReadFormat("sched", "no_such_event"); err == nil || !strings.Contains(err.Error(), "no format file") {
		t.Errorf("missing event: %v", err)
	}
}

func FuzzParseFormat(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.format")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, text string) {
		fm, err := ParseFormat(text)
		if err != nil {
			return
		}
		if len(fm.Fields) == 0 {
			t.Fatal("a format without fields was accepted")
		}
		for name, fd := range fm.Fields {
			if name == "" || name != fd.Name || strings.ContainsAny(name, " *[;") {
				t.Fatalf("bad field name %q in %+v", name, fd)
			}
		}
	})
}
