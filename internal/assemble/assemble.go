// Package assemble concatenates the source files of a store's own language
// (the Redis store's Lua, the PostgreSQL store's SQL), each after the files
// it requires. A line "-- requires: <file>" names one, included once,
// before the file that names it. A line "-- instance of: <file>" includes
// that file again after the one that names it, with every "__kind__"
// replaced by the naming file's name without its extension: a template
// that several kinds instantiate under their own names.
package assemble

import (
	"io/fs"
	"strings"
)

// Assembler builds one source from files of fsys.
type Assembler struct {
	fsys fs.ReadFileFS
	src  strings.Builder
	seen map[string]bool
}

// New returns an assembler of the files of fsys.
func New(fsys fs.ReadFileFS) *Assembler {
	return &Assembler{fsys: fsys, seen: map[string]bool{}}
}

// Include appends file, after the files it requires, unless it was
// included before, then the templates it is an instance of.
func (a *Assembler) Include(file string) error {
	if a.seen[file] {
		return nil
	}
	a.seen[file] = true
	b, err := a.requires(file)
	if err != nil {
		return err
	}
	a.WriteString(string(b) + "\n")
	for _, tmpl := range directives(b, "-- instance of: ") {
		t, err := a.requires(tmpl)
		if err != nil {
			return err
		}
		name, _, _ := strings.Cut(file, ".")
		a.WriteString(strings.ReplaceAll(string(t), "__kind__", name) + "\n")
	}
	return nil
}

// requires reads file and includes what it requires.
func (a *Assembler) requires(file string) ([]byte, error) {
	b, err := a.fsys.ReadFile(file)
	if err != nil {
		return nil, err
	}
	for _, dep := range directives(b, "-- requires: ") {
		if err := a.Include(dep); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// directives returns the files named on src's lines that start with prefix.
func directives(src []byte, prefix string) []string {
	var files []string
	for _, line := range strings.Split(string(src), "\n") {
		if f, ok := strings.CutPrefix(line, prefix); ok {
			files = append(files, strings.TrimSpace(f))
		}
	}
	return files
}

// WriteString appends s.
func (a *Assembler) WriteString(s string) { a.src.WriteString(s) }

// String returns the source so far.
func (a *Assembler) String() string { return a.src.String() }
