package cpuset

import (
	"reflect"
	"testing"
)

func TestParseAndFormat(t *testing.T) {
	got, err := ParseList("5,0-2, 7-8,1")
	if err != nil || !reflect.DeepEqual(got, []int{0, 1, 2, 5, 7, 8}) {
		t.Fatalf("ParseList = %v, %v", got, err)
	}
	if s := FormatList(got); s != "0-2,5,7-8" {
		t.Errorf("FormatList = %q", s)
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "0-99999"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
	if on, err := Online(); err != nil || len(on) == 0 {
		t.Errorf("Online = %v, %v", on, err)
	}
	if m := Mask([]int{0, 3}); !m.IsSet(3) || m.IsSet(1) || m.Count() != 2 {
		t.Errorf("Mask: %v", m)
	}
}
