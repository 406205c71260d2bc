package explain

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the report for a person: per device, what its count
// means on the line, who holds it (as ref_tracker said) or can hold it,
// the verdict and the next commands.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	line := r.Line
	if line == "" {
		line = "unknown"
	}
	var found []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(r.Devices), "device waited for"}, {len(r.Namespaces), "busy namespace file"}, {len(r.NetnsRefs), "namespace reference report"}} {
		if c.n > 0 {
			found = append(found, plural(c.n, c.what))
		}
	}
	if len(found) == 0 {
		found = []string{"nothing"}
	}
	fmt.Fprintf(&b, "explain: %s in %s\n", strings.Join(found, ", "), plural(r.Lines, "line"))
	fmt.Fprintf(&b, "kernel line: %s (%s)\n", line, r.LineFrom)
	if r.Result == "nothing" {
		b.WriteString("\nnothing to explain: no \"unregister_netdevice: waiting for X to become free\", ref_tracker or \"Device or resource busy\" line\n")
	}
	for _, d := range r.Devices {
		span := ""
		if d.SpanS != nil {
			span = fmt.Sprintf(" over %.0f s", *d.SpanS)
		}
		fmt.Fprintf(&b, "\n%s: Usage count = %d in %s%s (%s)\n", d.Name, d.Count, plural(d.Warnings, "warning"), span, ints(d.Counts))
		para(&b, "count", d.Meaning)
		for _, t := range d.Tracked {
			who := t.Holder
			if who == "" {
				who = "a holder the emulated kernel does not model"
			}
			of := ""
			if t.Total > 0 {
				of = fmt.Sprintf(" of %d", t.Total)
			}
			loc := ""
			if t.Loc != "" {
				loc = " (" + t.Loc + ")"
			}
			times := ""
			if t.Reports > 1 {
				times = fmt.Sprintf(", reported %d times", t.Reports)
			}
			para(&b, "held by", fmt.Sprintf("%s: %s%s taken in %s%s (ref_tracker, line %d%s)", who, plural(t.Users, "tracked reference"), of, t.Owner, loc, t.Line, times))
		}
		if len(d.Possible) > 0 {
			var groups []string
			var names []string
			for i, p := range d.Possible {
				names = append(names, p.Name)
				if i == len(d.Possible)-1 || d.Possible[i+1].Release != p.Release {
					groups = append(groups, strings.Join(names, ", ")+" ("+p.Release+")")
					names = nil
				}
			}
			para(&b, "holders", fmt.Sprintf("on line %s: %s", r.Line, strings.Join(groups, "; ")))
		}
		para(&b, "verdict", d.Verdict+": "+d.Why)
		for i, n := range d.Next {
			label := ""
			if i == 0 {
				label = "next"
			}
			fmt.Fprintf(&b, "  %-8s %s\n", label, n)
		}
	}
	for _, n := range r.Namespaces {
		fmt.Fprintf(&b, "\n%s: Device or resource busy (line %d)\n", n.Path, n.Line)
		para(&b, "why", n.Why)
		switch {
		case len(n.Mounts) > 0:
			for _, m := range n.Mounts {
				where := "another mount namespace"
				if m.Own {
					where = "ndst's own mount namespace"
				}
				para(&b, "mounted", fmt.Sprintf("%s at %s in %s %s (pid %d %s)", m.Ns, m.MountPoint, where, m.MountNs, m.PID, m.Comm))
			}
		case n.Checked:
			para(&b, "mounted", "no mount of it is visible in /proc/*/mountinfo now (it may have gone, or a process ndst cannot read holds it)")
		}
		for i, c := range n.Next {
			label := ""
			if i == 0 {
				label = "next"
			}
			fmt.Fprintf(&b, "  %-8s %s\n", label, c)
		}
	}
	for _, t := range r.NetnsRefs {
		fmt.Fprintf(&b, "\nnamespace reference (ref_tracker %q, line %d): %d of %d taken in %s", t.Dir, t.Line, t.Users, t.Total, t.Owner)
		if t.Loc != "" {
			fmt.Fprintf(&b, " (%s)", t.Loc)
		}
		b.WriteString(": a reference to a network namespace, not to a device; the namespace's cleanup waits for it\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// para prints label and text, wrapped at 100 columns under the label.
func para(b *strings.Builder, label, text string) {
	const width = 100
	indent := strings.Repeat(" ", 11)
	line := fmt.Sprintf("  %-8s ", label)
	n := len(line)
	b.WriteString(line)
	for i, word := range strings.Fields(text) {
		if i > 0 && n+1+len(word) > width {
			b.WriteString("\n" + indent)
			n = len(indent)
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	b.WriteByte('\n')
}

func ints(v []int) string {
	if len(v) > 8 {
		return fmt.Sprintf("%s ... %d", ints(v[:4]), v[len(v)-1])
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
