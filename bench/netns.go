package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
)

// Namespace cells: with Spec.NetnsCounts set, every emulated cell adds N
// network namespaces (each with lo, Links links and, with Veth, a veth pair
// into the initial namespace) and deletes them all, at once ("batched") or
// one at a time, each one's whole cleanup waited for ("one-by-one"). The
// cell's time is when the kernel's cleanup was done; when the delete
// returned and when the devices were gone are kept as counters
// (netns_returned_ns, netns_gone_ns), with the number of cleanup runs
// (cleanup_batches), so that the table and every export show them.

// NetnsCell reports whether c is a namespace cell.
func (c Cell) NetnsCell() bool { return c.Namespaces > 0 }

// netnsWhat describes what each namespace of a cell holds, for tables.
func (c Cell) netnsWhat() string {
	if !c.NetnsCell() {
		return "-"
	}
	parts := []string{"lo"}
	if c.Links > 0 {
		parts = append(parts, fmt.Sprintf("%d links", c.Links))
	}
	if c.Veth {
		parts = append(parts, "veth")
	}
	s := strings.Join(parts, "+")
	if c.LoUp {
		s += " (lo up)"
	}
	return s
}

// netnsStyle names a namespace cell's delete style.
func (c Cell) netnsStyle() string {
	if c.OneByOne() {
		return ndst.StyleOneByOne
	}
	return ndst.StyleAllAtOnce
}

// netnsDevices is the devices a namespace cell holds at most.
func (c Cell) netnsDevices() int {
	per := 1 + c.Links
	if c.Veth {
		per += 2
	}
	return c.Namespaces * (per + 32) // a namespace's own tables, in devices' worth
}

// validateNetns checks the namespace dimensions.
func (s *Spec) validateNetns() error {
	if len(s.NetnsCounts) == 0 {
		if len(s.NetnsLinks) > 0 || len(s.NetnsVeth) > 0 || s.NetnsLoUp {
			return ndst.Usagef("--netns-links, --netns-veth and --netns-lo-up describe namespace cells; give --netns-count too")
		}
		return nil
	}
	for _, b := range s.Backends {
		if b != "sim" {
			return ndst.Usagef("--netns-count: namespace cells run on the emulated kernel only (--backend sim), not --backend %s", b)
		}
	}
	for _, n := range s.NetnsCounts {
		if n < 1 || n > ndst.MaxNetnsCount {
			return ndst.Usagef("--netns-count: %d is out of range; want 1..%d", n, ndst.MaxNetnsCount)
		}
	}
	for _, k := range s.NetnsLinks {
		if k < 0 || k > ndst.MaxNetnsLinks {
			return ndst.Usagef("--netns-links: %d is out of range; want 0..%d", k, ndst.MaxNetnsLinks)
		}
	}
	if dup := firstDupInt(s.NetnsCounts); dup != 0 {
		return ndst.Usagef("--netns-count: %d is listed twice", dup)
	}
	seen := map[int]bool{}
	for _, k := range s.NetnsLinks {
		if seen[k] {
			return ndst.Usagef("--netns-links: %d is listed twice", k)
		}
		seen[k] = true
	}
	if len(s.NetnsVeth) == 2 && s.NetnsVeth[0] == s.NetnsVeth[1] || len(s.NetnsVeth) > 2 {
		return ndst.Usagef("--netns-veth: give false, true, or both once")
	}
	return nil
}

// netnsLists returns the links and veth lists with their defaults.
func (s *Spec) netnsLists() ([]int, []bool) {
	links, veth := s.NetnsLinks, s.NetnsVeth
	if len(links) == 0 {
		links = []int{0}
	}
	if len(veth) == 0 {
		veth = []bool{false}
	}
	return links, veth
}

// numNetnsCells is the number of namespace cells.
func (s *Spec) numNetnsCells() int {
	links, veth := s.netnsLists()
	return mulCap(len(s.Batches)*len(s.NetnsCounts), len(links), len(veth),
		len(s.Profiles), len(s.Strategies), len(s.HZ), len(s.CPUs), len(s.Preempts))
}

// netnsCells enumerates the namespace cells: profile, HZ, CPUs, preempt,
// style, N, links, veth, strategy (outermost first).
func (s *Spec) netnsCells() []Cell {
	links, veth := s.netnsLists()
	var out []Cell
	for _, p := range s.Profiles {
		for _, hz := range s.HZ {
			for _, cpus := range s.CPUs {
				for _, pre := range s.Preempts {
					for _, bat := range s.Batches {
						for _, n := range s.NetnsCounts {
							for _, k := range links {
								for _, v := range veth {
									for _, st := range s.Strategies {
										out = append(out, Cell{Backend: "sim", Profile: p, Strategy: st, HZ: hz, CPUs: cpus,
											Preempt: pre, Batch: bat, Count: n, Namespaces: n, Links: k, Veth: v, LoUp: s.NetnsLoUp})
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// runNetnsSim runs one namespace run: a fresh kernel, N namespaces added,
// then deleted.
func (s *Spec) runNetnsSim(ctx context.Context, c Cell, seed uint64) Sample {
	smp := Sample{Seed: seed, Result: ndst.ResultOK}
	b, err := emu.Open(ctx, s.emuConfig(c, seed))
	if err != nil {
		return failed(smp, err)
	}
	defer b.Close()
	add, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: c.Namespaces, Links: c.Links, LinkTemplate: s.Template,
		Veth: c.Veth, LoUp: c.LoUp})
	if add != nil {
		smp.AddNS, smp.AddWallNS = deref(add.VirtualNS), add.WallNS
	}
	if err != nil {
		smp.StoppedIn = "add"
		return outcome(smp, add, err)
	}
	smp.StoppedIn = "del"
	del, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: c.Namespaces, OneByOne: c.OneByOne(), CNI: c.Batch == BatchCNI})
	if del != nil {
		smp.DelNS, smp.DelWallNS = deref(del.VirtualNS), del.WallNS
		smp.Latency, smp.batched = del.Latency, del.Batched
		smp.Phases = del.Phases
		smp.Counters = map[string]int64{}
		for k, v := range del.Counters {
			smp.Counters[k] = v
		}
		if n := del.Netns; n != nil {
			if n.DoneNS != nil {
				smp.DelNS = *n.DoneNS
			}
			smp.Counters["netns_returned_ns"] = n.ReturnedNS
			if n.GoneNS != nil {
				smp.Counters["netns_gone_ns"] = *n.GoneNS
			}
		}
	}
	return outcome(smp, del, err)
}
