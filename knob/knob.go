// Package knob is the catalogue of the kernel's own knobs that change how
// network devices and namespaces are torn down: RCU's boot parameters and
// sysfs files, the net and user sysctls, the preemption boot parameter and
// the build options (catalog.go). A knob is named exactly as the kernel
// names it: the boot parameter (rcutree.jiffies_till_first_fqs), the sysctl
// (net.core.netdev_unregister_timeout_secs) or the configuration option
// (CONFIG_HZ); the file a running kernel shows it in is accepted too
// (/sys/module/rcutree/parameters/jiffies_till_first_fqs).
//
// This package knows what a knob is (its type, the values the kernel
// accepts, where it lives, whether it can change at run time, what it costs
// elsewhere); it does not know which kernel has it. Which line has which
// knob, since which release and commit, with which default, is data of the
// kernel line (netdev/knob_lines.go), and what a knob does is applied where
// the mechanism lives (rcu/, netdev/, sim/).
//
// Invariants: Parse accepts exactly the values documented by the knob's
// Type and range and nothing else; a parsed Value prints back (Value.String)
// as text Parse accepts, with the same meaning.
package knob

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind says when a knob takes effect.
type Kind int

const (
	// Runtime knobs are files a running kernel lets root write (sysfs,
	// /proc/sys); they take effect at once.
	Runtime Kind = iota
	// Boot knobs are kernel command-line parameters; a running kernel
	// shows some of them read-only.
	Boot
	// Build knobs are configuration options: they need another kernel.
	Build
)

func (k Kind) String() string { return [...]string{"runtime", "boot", "build"}[k] }

// Type is the kind of value a knob takes.
type Type int

const (
	// Bool is a module bool parameter (kstrtobool): 1/0, y/n, Y/N,
	// true/false, on/off.
	Bool Type = iota
	// Int is an integer the kernel reads with kstrto* in base 0 (so 0x10
	// is 16 and a leading 0 is octal), within [Min, Max].
	Int
	// CPUList is a CPU list as cpulist_parse reads it: "all", "none" or
	// ranges such as 0-3,6.
	CPUList
	// Choice is one of Choices.
	Choice
)

func (t Type) String() string { return [...]string{"bool", "integer", "CPU list", "choice"}[t] }

// Def is one knob.
type Def struct {
	// Name is the kernel's name: boot parameter, sysctl or CONFIG_ option.
	Name string
	// Path is the file a running kernel shows the knob in ("" for none):
	// writable when Kind is Runtime, read-only otherwise.
	Path string
	// Aliases are other names accepted for the knob (another file that
	// shows it, the sysctl's /proc/sys path).
	Aliases []string
	Kind    Kind
	Type    Type
	// Min and Max bound an Int; Choices lists a Choice's values.
	Min, Max int64
	Choices  []string
	// Unit of an Int ("jiffies", "callbacks", ...).
	Unit string
	// What says what the knob does in the kernel, in one line.
	What string
	// Cost says what setting it away from its default costs elsewhere.
	Cost string
	// Range overrides the printed range of an Int (the kernel's own words
	// where the model's domain is narrower than the type).
	Range string
	// CostOff, when set, is the cost of turning the knob off where it is
	// on (Cost is then that of turning it on).
	CostOff string
}

// RangeText is the accepted range, as error messages give it.
func (d *Def) RangeText() string {
	switch d.Type {
	case Bool:
		return "0 or 1 (y/n, true/false, on/off)"
	case CPUList:
		return `a CPU list ("all", "none", or ranges such as 0-3,6)`
	case Choice:
		return strings.Join(d.Choices, ", ")
	}
	if d.Range != "" {
		return d.Range
	}
	return fmt.Sprintf("%d..%d", d.Min, d.Max)
}

// CPUSet is a parsed CPU list: All, or the listed CPUs in ascending order.
type CPUSet struct {
	All  bool
	CPUs []int
}

// Mask returns which of n CPUs the set holds, and the first listed CPU that
// does not exist on a machine of n CPUs (-1 if none).
func (s CPUSet) Mask(n int) ([]bool, int) {
	m := make([]bool, n)
	for i := range m {
		m[i] = s.All
	}
	bad := -1
	for _, c := range s.CPUs {
		if c >= n {
			if bad < 0 {
				bad = c
			}
			continue
		}
		m[c] = true
	}
	return m, bad
}

// Empty reports whether the set holds no CPU.
func (s CPUSet) Empty() bool { return !s.All && len(s.CPUs) == 0 }

func (s CPUSet) String() string {
	if s.All {
		return "all"
	}
	if len(s.CPUs) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(s.CPUs); {
		j := i
		for j+1 < len(s.CPUs) && s.CPUs[j+1] == s.CPUs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(s.CPUs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s.CPUs[i], s.CPUs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Value is a knob's value: Int holds a Bool (0 or 1), an Int, or the index
// of a Choice; CPUs holds a CPUList.
type Value struct {
	Int  int64
	CPUs CPUSet
	def  *Def
}

// IntValue, BoolValue, ChoiceValue and CPUValue make values of d.
func IntValue(d *Def, v int64) Value { return Value{Int: v, def: d} }

// BoolValue is a Bool value.
func BoolValue(d *Def, v bool) Value {
	if v {
		return Value{Int: 1, def: d}
	}
	return Value{def: d}
}

// ChoiceValue is the Choice value named c; it panics on a name d lacks (a
// programming error in a catalogue table).
func ChoiceValue(d *Def, c string) Value {
	i := slices.Index(d.Choices, c)
	if i < 0 {
		panic("knob: " + d.Name + " has no choice " + c)
	}
	return Value{Int: int64(i), def: d}
}

// CPUValue is a CPUList value.
func CPUValue(d *Def, s CPUSet) Value { return Value{CPUs: s, def: d} }

// Def returns the knob the value belongs to.
func (v Value) Def() *Def { return v.def }

// Bool is the value of a Bool knob.
func (v Value) Bool() bool { return v.Int != 0 }

// Choice is the value of a Choice knob.
func (v Value) Choice() string {
	if v.def == nil || v.Int < 0 || int(v.Int) >= len(v.def.Choices) {
		return ""
	}
	return v.def.Choices[v.Int]
}

// Equal reports whether two values of one knob mean the same.
func (v Value) Equal(w Value) bool {
	if v.def != nil && v.def.Type == CPUList {
		return v.CPUs.All == w.CPUs.All && slices.Equal(v.CPUs.CPUs, w.CPUs.CPUs)
	}
	return v.Int == w.Int
}

// String prints the value the way Parse reads it.
func (v Value) String() string {
	if v.def == nil {
		return strconv.FormatInt(v.Int, 10)
	}
	switch v.def.Type {
	case Bool:
		if v.Int != 0 {
			return "1"
		}
		return "0"
	case CPUList:
		return v.CPUs.String()
	case Choice:
		return v.Choice()
	}
	return strconv.FormatInt(v.Int, 10)
}

// Error is a knob the command line named wrongly: an unknown name, a value
// of the wrong type or out of range. Callers report it as a usage error.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// Parse reads s as a value of d.
func (d *Def) Parse(s string) (Value, error) {
	switch d.Type {
	case Bool:
		switch strings.ToLower(s) {
		case "1", "y", "yes", "true", "on":
			return BoolValue(d, true), nil
		case "0", "n", "no", "false", "off":
			return BoolValue(d, false), nil
		}
		return Value{}, errorf("%s=%s: not a bool; want %s", d.Name, s, d.RangeText())
	case Int:
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return Value{}, errorf("%s=%s: out of range; want %s", d.Name, s, d.RangeText())
			}
			return Value{}, errorf("%s=%s: not an integer; want %s", d.Name, s, d.RangeText())
		}
		if v < d.Min || v > d.Max {
			return Value{}, errorf("%s=%s: out of range; want %s", d.Name, s, d.RangeText())
		}
		return IntValue(d, v), nil
	case Choice:
		if i := slices.Index(d.Choices, s); i >= 0 {
			return Value{Int: int64(i), def: d}, nil
		}
		return Value{}, errorf("%s=%s: not one of %s", d.Name, s, d.RangeText())
	case CPUList:
		set, err := parseCPUList(s)
		if err != nil {
			return Value{}, errorf("%s=%s: %v; want %s", d.Name, s, err, d.RangeText())
		}
		return CPUValue(d, set), nil
	}
	return Value{}, errorf("%s: unknown type", d.Name)
}

// maxCPU bounds the CPU numbers a list may name (NR_CPUS of the largest
// configurations).
const maxCPU = 8191

// parseCPUList reads "all", "none" or comma-separated CPUs and ranges
// (a-b, a-b:g/w as bitmap_parselist reads them).
func parseCPUList(s string) (CPUSet, error) {
	switch strings.ToLower(s) {
	case "all":
		return CPUSet{All: true}, nil
	case "none", "":
		return CPUSet{}, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, step, width, err := parseRange(part)
		if err != nil {
			return CPUSet{}, err
		}
		for base := lo; base <= hi; base += step {
			for c := base; c < base+width && c <= hi; c++ {
				seen[c] = true
			}
		}
	}
	var cpus []int
	for c := range seen {
		cpus = append(cpus, c)
	}
	slices.Sort(cpus)
	return CPUSet{CPUs: cpus}, nil
}

func parseRange(part string) (lo, hi, step, width int, err error) {
	num := func(x string) (int, error) {
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 || strings.HasPrefix(x, "+") {
			return 0, fmt.Errorf("%q is not a CPU number", x)
		}
		if n > maxCPU {
			return 0, fmt.Errorf("CPU %d is beyond the largest CPU number %d", n, maxCPU)
		}
		return n, nil
	}
	r, group, hasGroup := strings.Cut(part, ":")
	a, b, isRange := strings.Cut(r, "-")
	if lo, err = num(a); err != nil {
		return
	}
	hi = lo
	if isRange {
		if hi, err = num(b); err != nil {
			return
		}
		if hi < lo {
			err = fmt.Errorf("range %s runs backwards", r)
			return
		}
	}
	step, width = 1, 1
	if hasGroup {
		u, w, ok := strings.Cut(group, "/")
		if !ok || !isRange {
			err = fmt.Errorf("%q: a group needs a range and used/group (0-7:2/4)", part)
			return
		}
		if width, err = num(u); err != nil {
			return
		}
		if step, err = num(w); err != nil {
			return
		}
		if width == 0 || step == 0 || width > step {
			err = fmt.Errorf("%q: want 0 < used <= group", part)
		}
	}
	return
}

// Assignment is one NAME=VALUE of the command line, parsed.
type Assignment struct {
	Def   *Def
	Value Value
	// Given is the text as written (NAME=VALUE).
	Given string
}

func (a Assignment) String() string { return a.Def.Name + "=" + a.Value.String() }

// ParseAssignment reads NAME=VALUE, NAME being a knob's name, one of its
// aliases or its file.
func ParseAssignment(s string) (Assignment, error) {
	name, val, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return Assignment{}, errorf("--param %q: want NAME=VALUE (ndst profiles --knobs lists the names)", s)
	}
	d := Lookup(name)
	if d == nil {
		msg := fmt.Sprintf("--param %s: unknown knob %q", s, name)
		if near := nearest(name); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		return Assignment{}, &Error{msg + "; ndst profiles --knobs lists them"}
	}
	v, err := d.Parse(strings.TrimSpace(val))
	if err != nil {
		return Assignment{}, err
	}
	return Assignment{Def: d, Value: v, Given: s}, nil
}

// ParseAssignments parses every NAME=VALUE and refuses one knob given twice
// with different values.
func ParseAssignments(l []string) ([]Assignment, error) {
	var out []Assignment
	for _, s := range l {
		a, err := ParseAssignment(s)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(out, func(b Assignment) bool { return b.Def == a.Def }); i >= 0 {
			if !out[i].Value.Equal(a.Value) {
				return nil, errorf("--param %s and --param %s set %s twice", out[i].Given, a.Given, a.Def.Name)
			}
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// nearest suggests the catalogue name closest to a mistyped one: the one
// whose last dotted part matches, else one that contains it.
func nearest(name string) string {
	short := name[strings.LastIndexAny(name, "./")+1:]
	for _, d := range Catalog {
		if d.Name == short || strings.HasSuffix(d.Name, "."+short) {
			return d.Name
		}
	}
	for _, d := range Catalog {
		if len(short) >= 4 && strings.Contains(d.Name, short) {
			return d.Name
		}
	}
	return ""
}
