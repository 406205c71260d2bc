package nlbackend

import "fmt"

// ResetReport says what ResetNamespace did.
type ResetReport struct {
	Op      string `json:"op"`      // "reset"
	Backend string `json:"backend"` // "netlink"
	Result  string `json:"result"`  // "ok"
	Netns   string `json:"netns"`
	Path    string `json:"path"` // the namespace's file, /run/netns/NAME
	// Existed is false when nothing had that name: nothing was done.
	Existed bool `json:"existed"`
	// Stale is true when the name was a leftover empty file of an
	// interrupted creation, not a namespace: the file was removed.
	Stale bool `json:"stale,omitempty"`
	// Root is true when the name was bound to the host's root namespace
	// (with Options.AllowRootNS): only the name was removed, and ndst's
	// own devices there.
	Root bool `json:"root,omitempty"`
	// Deleted counts ndst's devices deleted.
	Deleted int `json:"deleted"`
	// Foreign names the devices not created by ndst that were deleted with
	// the namespace.
	Foreign []string `json:"foreign_deleted,omitempty"`
	// Returned names physical devices the kernel moves back to the root
	// namespace when the namespace goes.
	Returned []string `json:"returned_to_root,omitempty"`
	WallNS   int64    `json:"wall_ns"`
}

// Lines is the report as lines of text.
func (r *ResetReport) Lines() []string {
	switch {
	case !r.Existed:
		return []string{fmt.Sprintf("network namespace %s does not exist; nothing to do", r.Netns)}
	case r.Stale:
		return []string{fmt.Sprintf("removed %s, an empty file left by an interrupted namespace creation (not a namespace)", r.Path)}
	}
	what := fmt.Sprintf("network namespace %s deleted, with %s of ndst's", r.Netns, plural(r.Deleted, "device"))
	if r.Root {
		what = fmt.Sprintf("name %s removed (it was bound to the host's root namespace, which lives on); %s of ndst's deleted there", r.Netns, plural(r.Deleted, "device"))
	}
	out := []string{what}
	if len(r.Foreign) > 0 {
		out = append(out, fmt.Sprintf("also deleted %s not created by ndst: %s", plural(len(r.Foreign), "device"), joinNames(r.Foreign)))
	}
	if len(r.Returned) > 0 {
		out = append(out, fmt.Sprintf("%s returned to the root namespace by the kernel: %s", plural(len(r.Returned), "physical device"), joinNames(r.Returned)))
	}
	return out
}

// joinNames lists names, the first 20 of them and how many more.
func joinNames(names []string) string {
	const show = 20
	s := ""
	for i, n := range names {
		if i == show {
			return s + fmt.Sprintf(" and %d more", len(names)-show)
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// plural is "1 device" or "N devices".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
