// Package tpformat reads the record layouts of the kernel's trace events from
// their tracefs format files, which every kernel with tracepoints has, BTF
// or not: the classic engine reads its fields at these offsets.
package tpformat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Roots are where tracefs is mounted, in the order tried: its own mount
// point (4.1+), then its place under debugfs.
var Roots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// Field is one field of an event record.
type Field struct {
	Type    string // C declaration without the name, e.g. "pid_t", "char[16]", "__data_loc char[]"
	Name    string
	Offset  uint32
	Size    uint32
	Signed  bool
	DataLoc bool // a __data_loc field: a u32 (length<<16 | offset) locating the data in the record
}

// Format is the record layout of one event.
type Format struct {
	Name   string
	ID     uint32
	Fields map[string]Field
}

// ParseFormat parses the text of an event's format file. Each field line
// reads "field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;".
func ParseFormat(text string) (*Format, error) {
	f := &Format{Fields: map[string]Field{}}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "name:"):
			f.Name = strings.TrimSpace(strings.TrimPrefix(line, "name:"))
		case strings.HasPrefix(line, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "ID:")), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("bad event id %q", line)
			}
			f.ID = uint32(id)
		case strings.HasPrefix(line, "field:"):
			fd, err := parseField(line)
			if err != nil {
				return nil, err
			}
			f.Fields[fd.Name] = fd
		}
	}
	if len(f.Fields) == 0 {
		return nil, errors.New("no fields in the format")
	}
	return f, nil
}

func parseField(line string) (Field, error) {
	var fd Field
	var haveOff, haveSize bool
	for _, part := range strings.Split(line, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			continue
		}
		switch k {
		case "field":
			decl := strings.TrimSpace(v)
			// The name is the last identifier, before any array suffix.
			i := strings.LastIndexAny(decl, " *")
			if i < 0 || i == len(decl)-1 {
				return fd, fmt.Errorf("bad field declaration %q", decl)
			}
			name, typ := decl[i+1:], strings.TrimSpace(decl[:i+1])
			if j := strings.IndexByte(name, '['); j >= 0 {
				typ += name[j:]
				name = name[:j]
			}
			if name == "" {
				return fd, fmt.Errorf("bad field declaration %q", decl)
			}
			fd.Name, fd.Type = name, typ
			fd.DataLoc = strings.HasPrefix(typ, "__data_loc") || strings.HasPrefix(typ, "__rel_loc")
		case "offset", "size", "signed":
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return fd, fmt.Errorf("bad %s in %q", k, line)
			}
			switch k {
			case "offset":
				fd.Offset, haveOff = uint32(n), true
			case "size":
				fd.Size, haveSize = uint32(n), true
			default:
				fd.Signed = n != 0
			}
		}
	}
	if fd.Name == "" || !haveOff || !haveSize {
		return fd, fmt.Errorf("incomplete field line %q", line)
	}
	return fd, nil
}

// ReadFormat reads the format of event system/name from the first tracefs
// root that has it.
func ReadFormat(system, name string) (*Format, error) {
	var firstErr error
	for _, root := range Roots {
		b, err := os.ReadFile(filepath.Join(root, "events", system, name, "format"))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		f, err := ParseFormat(string(b))
		if err != nil {
			return nil, fmt.Errorf("event %s/%s: %w", system, name, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("event %s/%s: no format file under %s (is tracefs mounted?): %w",
		system, name, strings.Join(Roots, " or "), firstErr)
}
