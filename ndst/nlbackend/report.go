package nlbackend

import (
	"context"
	"errors"
	"fmt"
)

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
	// Module counts the ndst module's devices (--backend module), which
	// went with the namespace.
	Module int `json:"module_devices,omitempty"`
	// Kept names the virtual devices not created by ndst that the
	// namespace holds; with any, the namespace is kept (NamespaceKept).
	Kept          []string `json:"foreign_kept,omitempty"`
	NamespaceKept bool     `json:"namespace_kept,omitempty"`
	// Returned names physical devices the kernel moves back to the root
	// namespace when the namespace goes.
	Returned []string `json:"returned_to_root,omitempty"`
	// Namespaces names ndst's other namespaces deleted (ResetAll), InUse
	// those left to an ndst still at work, with why.
	Namespaces []string `json:"namespaces_deleted,omitempty"`
	InUse      []string `json:"namespaces_in_use,omitempty"`
	// Notes say what else was cleaned up, or could not be.
	Notes []string `json:"notes,omitempty"`
	// Error is why reset did not finish ("" when it did).
	Error  string `json:"error,omitempty"`
	WallNS int64  `json:"wall_ns"`
}

// Lines is the report as lines of text.
func (r *ResetReport) Lines() []string {
	var out []string
	switch {
	case !r.Existed:
		out = append(out, fmt.Sprintf("network namespace %s does not exist; nothing to do there", r.Netns))
	case r.Stale:
		out = append(out, fmt.Sprintf("%s was an empty file left by an interrupted ndst (not a namespace): removed", r.Path))
	case r.Root:
		out = append(out, fmt.Sprintf("name %s removed (it was bound to the host's root namespace, which lives on); %s of ndst's deleted there", r.Netns, plural(r.Deleted, "device")))
	case r.NamespaceKept:
		out = append(out, fmt.Sprintf("network namespace %s kept: %s of ndst's deleted, %s not created by ndst left: %s",
			r.Netns, plural(r.Deleted, "device"), plural(len(r.Kept), "virtual device"), joinNames(r.Kept)))
	default:
		what := fmt.Sprintf("network namespace %s deleted, with %s of ndst's", r.Netns, plural(r.Deleted, "device"))
		if r.Module > 0 {
			what += fmt.Sprintf(" and %s of the ndst module's, which went with it", plural(r.Module, "device"))
		}
		out = append(out, what)
	}
	if len(r.Returned) > 0 && !r.NamespaceKept {
		out = append(out, fmt.Sprintf("%s returned to the root namespace by the kernel: %s", plural(len(r.Returned), "physical device"), joinNames(r.Returned)))
	}
	if len(r.Namespaces) > 0 {
		out = append(out, fmt.Sprintf("deleted %s of ndst's: %s", plural(len(r.Namespaces), "other namespace"), joinNames(r.Namespaces)))
	}
	if len(r.InUse) > 0 {
		out = append(out, fmt.Sprintf("left %s of an ndst still at work: %s", plural(len(r.InUse), "namespace"), joinNames(r.InUse)))
	}
	return append(out, r.Notes...)
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

// restHint says what an add that stopped after made of want left, and what
// adds the rest: each created object is whole, and a rerun of the same
// command would add want more, not the rest. After an interruption the
// rest is one command away; after a failure, once its cause is fixed.
func restHint(err error, cmd, what string, made, want int) string {
	s := fmt.Sprintf("created %d of %d %s, each whole", made, want, what)
	if made >= want {
		return s
	}
	rest := fmt.Sprintf("`ndst --backend netlink %s %d` adds the rest", cmd, want-made)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return s + "; " + rest
	}
	return s + "; once the cause is fixed, " + rest
}
