package netdev

import (
	"fmt"
	"math"

	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/sim"
)

// The kernel's knobs, line by line: which line has which knob, since which
// release and commit, with which default, read where. A line has the knobs
// of the line before it plus its own entries below (an entry for a knob the
// line already has replaces it: a new default or a new rule). What the
// catalogue says about each knob (type, files, cost) is in package knob;
// what a knob does is applied by knobs.go to the mechanisms (rcu.Config,
// the registry, the namespaces, the machine).
//
// Commits are marked Confirmed when their id and title were read in a
// commit notice, a tree or a pull request of the release named; the others
// carry the release where the knob is first seen in the trees read.

// LineKnob is one knob as a kernel line has it.
type LineKnob struct {
	Def *knob.Def
	// Since is the release the knob (or this rule of it) came in, Commit
	// its commit ("" when not confirmed), Title the commit's subject.
	Since, Commit, Title string
	// Confirmed: Commit and Since were read in the commit's own notice.
	Confirmed bool
	// Source is where the definition and default were read.
	Source string
	// Default is the value the knob has during a run unless --param sets
	// it; it may depend on the machine and on knobs resolved before it.
	Default func(c *KnobContext) knob.Value
	// Check refuses a value on this machine (nil: every value of the type).
	Check func(c *KnobContext, v knob.Value) error
	// On, when set, says whether a value turns the mechanism on (the
	// kernel's own test of it on this line).
	On func(v knob.Value) bool
	// Max narrows the type's range on this line (0: the catalogue's).
	Max int64
	// Applies, when set, says whether the machine has the knob at all
	// (preempt= only on a PREEMPT_DYNAMIC build); a knob that does not
	// apply has no value, and giving it fails Check.
	Applies func(c *KnobContext) bool
}

// KnobContext is what a knob's default and checks may depend on: the line,
// the machine, the RCU implementation and the knobs resolved so far.
type KnobContext struct {
	Line    string
	HZ      int
	CPUs    int
	Preempt sim.Preempt
	RCU     string
	vals    map[string]knob.Value
}

// Value is a knob resolved before the one being resolved (the zero Value
// when the line lacks it).
func (c *KnobContext) Value(name string) knob.Value { return c.vals[name] }

// Has reports whether a knob was resolved (the line has it).
func (c *KnobContext) Has(name string) bool { _, ok := c.vals[name]; return ok }

func intDefault(name string, v int64) func(*KnobContext) knob.Value {
	d := knob.MustLookup(name)
	return func(*KnobContext) knob.Value { return knob.IntValue(d, v) }
}

func boolDefault(name string, v bool) func(*KnobContext) knob.Value {
	d := knob.MustLookup(name)
	return func(*KnobContext) knob.Value { return knob.BoolValue(d, v) }
}

// rt is PREEMPT_RT.
func (c *KnobContext) rt() bool { return c.Preempt == sim.PreemptRT }

// needsTree refuses the rcutree knobs with another RCU implementation.
func needsTree(c *KnobContext, v knob.Value) error {
	switch c.RCU {
	case "tree", "tree-preempt":
		return nil
	case "classic":
		return fmt.Errorf("with --rcu classic the parameter is rcuclassic.%s, which is not modelled", v.Def().Name[len("rcutree."):])
	}
	return fmt.Errorf("--rcu %s has no %s (Tiny RCU has no such parameter)", c.RCU, v.Def().Name)
}

// needsConfig refuses a knob whose build option the line's build lacks.
func needsConfig(option string) func(*KnobContext, knob.Value) error {
	return func(c *KnobContext, v knob.Value) error {
		if !c.Value(option).Bool() {
			return fmt.Errorf("%s needs %s=y, which kernel %s's build does not have (--param %s=y emulates a build with it)", v.Def().Name, option, c.Line, option)
		}
		return nil
	}
}

// checkCPUs refuses CPUs the machine does not have.
func checkCPUs(c *KnobContext, v knob.Value) error {
	if _, bad := v.CPUs.Mask(c.CPUs); bad >= 0 {
		return fmt.Errorf("%s=%s: CPU %d does not exist on %d CPU(s) (the kernel would ignore it)", v.Def().Name, v, bad, c.CPUs)
	}
	return nil
}

func all(checks ...func(*KnobContext, knob.Value) error) func(*KnobContext, knob.Value) error {
	return func(c *KnobContext, v knob.Value) error {
		for _, f := range checks {
			if err := f(c, v); err != nil {
				return err
			}
		}
		return nil
	}
}

// lk builds an entry.
func lk(name, since, commit, title string, confirmed bool, source string, def func(*KnobContext) knob.Value) LineKnob {
	return LineKnob{Def: knob.MustLookup(name), Since: since, Commit: commit, Title: title, Confirmed: confirmed, Source: source, Default: def}
}

func (l LineKnob) with(f func(*LineKnob)) LineKnob { f(&l); return l }

// fqsDefault is the jiffies_till_first_fqs/_next_fqs default that
// rcu_init_geometry computes: 1 + (HZ > 250) + (HZ > 500) + nr_cpu_ids/256.
func fqsDefault(name string) func(*KnobContext) knob.Value {
	d := knob.MustLookup(name)
	return func(c *KnobContext) knob.Value { return knob.IntValue(d, int64(modernFQSJiffies(c.HZ, c.CPUs))) }
}

// clampFQS is what param_set_first_fqs_jiffies/_next_ stores: at most HZ,
// and for next at least 1.
func clampFQS(v int64, hz int, next bool) int64 {
	if v > int64(hz) {
		v = int64(hz)
	}
	if next && v == 0 {
		v = 1
	}
	return v
}

// schedQSDefault is adjust_jiffies_till_sched_qs without an explicit
// jiffies_till_sched_qs: first + 2*next FQS (as stored), at least
// HZ/10 + nr_cpu_ids/256.
func schedQSDefault(c *KnobContext) knob.Value {
	first := clampFQS(c.Value(knob.FirstFQS).Int, c.HZ, false)
	next := clampFQS(c.Value(knob.NextFQS).Int, c.HZ, true)
	j := first + 2*next
	j = max(j, int64(c.HZ/10+c.CPUs/256))
	return knob.IntValue(knob.MustLookup(knob.SchedQS), j)
}

// knobHistory is the table: line -> its new or changed knobs.
var knobHistory = map[string][]LineKnob{
	"2.6.31": {
		lk(knob.ConfigHZ, "", "", "", false, "Kconfig HZ (kernel/Kconfig.hz)", func(c *KnobContext) knob.Value {
			return knob.IntValue(knob.MustLookup(knob.ConfigHZ), int64(c.HZ))
		}),
		lk(knob.Blimit, "2.6.29", "64db4cfff99c", "\"Tree RCU\": scalable classic RCU implementation", true,
			"2.6.31 kernel/rcutree.c: static int blimit = 10; module_param(blimit, int, 0)", intDefault(knob.Blimit, 10)).
			with(func(l *LineKnob) { l.Check, l.Max = needsTree, math.MaxInt32 }),
		lk(knob.QHiMark, "2.6.29", "64db4cfff99c", "\"Tree RCU\": scalable classic RCU implementation", true,
			"2.6.31 kernel/rcutree.c: static int qhimark = 10000; module_param(qhimark, int, 0)", intDefault(knob.QHiMark, 10000)).
			with(func(l *LineKnob) { l.Check, l.Max = needsTree, math.MaxInt32 }),
		lk(knob.QLowMark, "2.6.29", "64db4cfff99c", "\"Tree RCU\": scalable classic RCU implementation", true,
			"2.6.31 kernel/rcutree.c: static int qlowmark = 100; module_param(qlowmark, int, 0)", intDefault(knob.QLowMark, 100)).
			with(func(l *LineKnob) { l.Check, l.Max = needsTree, math.MaxInt32 }),
	},
	"5.10": {
		lk(knob.ConfigNoCB, "3.7", "", "", false, "Debian 5.10's config: CONFIG_RCU_NOCB_CPU is not set (docs/kernel-modern-sources.md §0)", boolDefault(knob.ConfigNoCB, false)),
		lk(knob.Blimit, "2.6.29", "64db4cfff99c", "\"Tree RCU\": scalable classic RCU implementation", true,
			"5.10 kernel/rcu/tree.c: static long blimit = DEFAULT_RCU_BLIMIT (10); module_param(blimit, long, 0444)", intDefault(knob.Blimit, 10)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.QHiMark, "2.6.29", "64db4cfff99c", "\"Tree RCU\": scalable classic RCU implementation", true,
			"5.10 kernel/rcu/tree.c: DEFAULT_RCU_QHIMARK 10000; module_param(qhimark, long, 0444)", intDefault(knob.QHiMark, 10000)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.QLowMark, "2.6.29", "64db4cfff99c", "\"Tree RCU\": scalable classic RCU implementation", true,
			"5.10 kernel/rcu/tree.c: DEFAULT_RCU_QLOMARK 100; module_param(qlowmark, long, 0444)", intDefault(knob.QLowMark, 100)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.RCUExpedited, "3.x", "3705b88db0d7", "rcu: Add a module parameter to force use of expedited RCU primitives", false,
			"5.10 kernel/rcu/update.c module_param(rcu_expedited, int, 0); kernel/ksysfs.c rcu_expedited_store (kstrtoint)", intDefault(knob.RCUExpedited, 0)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.RCUNormalAfterBoot, "4.x", "", "", false,
			"5.10 kernel/rcu/update.c: static int rcu_normal_after_boot; module_param(..., int, 0); PREEMPT_RT: Debian 5.10.262-1 debian/patches-rt/0073 \"rcu: Enable rcu_normal_after_boot unconditionally for RT\" (rt commit 1f3a70b3086e) sets it to IS_ENABLED(CONFIG_PREEMPT_RT) and registers the parameter only #ifndef CONFIG_PREEMPT_RT",
			func(c *KnobContext) knob.Value {
				return knob.IntValue(knob.MustLookup(knob.RCUNormalAfterBoot), b2i(c.rt()))
			}).
			with(func(l *LineKnob) {
				l.Check = all(needsTree, func(c *KnobContext, v knob.Value) error {
					if c.rt() {
						return fmt.Errorf("%s: a 5.10 PREEMPT_RT kernel has no such parameter; it is forced on (Debian 5.10.262-1 patches-rt/0073, rt commit 1f3a70b3086e)", v.Def().Name)
					}
					return nil
				})
			}),
		lk(knob.RCUNormal, "4.x", "", "", false,
			"5.10 kernel/rcu/update.c module_param(rcu_normal, int, 0); kernel/ksysfs.c rcu_normal_store; rcu_end_inkernel_boot sets it when rcu_normal_after_boot is set",
			func(c *KnobContext) knob.Value {
				return knob.IntValue(knob.MustLookup(knob.RCUNormal), b2i(c.Value(knob.RCUNormalAfterBoot).Int != 0))
			}).with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.FirstFQS, "3.x", "", "", false,
			"5.10 kernel/rcu/tree.c module_param_cb(jiffies_till_first_fqs, 0644): param_set_first_fqs_jiffies stores min(value, HZ); rcu_init_geometry's default", fqsDefault(knob.FirstFQS)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.NextFQS, "3.x", "", "", false,
			"5.10 kernel/rcu/tree.c module_param_cb(jiffies_till_next_fqs, 0644): param_set_next_fqs_jiffies stores min(max(value, 1), HZ)", fqsDefault(knob.NextFQS)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.SchedQS, "4.x", "", "", false,
			"5.10 kernel/rcu/tree.c module_param(jiffies_till_sched_qs, ulong, 0444); adjust_jiffies_till_sched_qs", schedQSDefault).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.Divisor, "5.4", "", "", false, "5.10 kernel/rcu/tree.c: static int rcu_divisor = 7; module_param(rcu_divisor, int, 0644)", intDefault(knob.Divisor, 7)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.ReschedNS, "5.4", "", "", false, "5.10 kernel/rcu/tree.c: static long rcu_resched_ns = 3 * NSEC_PER_MSEC; module_param(rcu_resched_ns, long, 0644)", intDefault(knob.ReschedNS, 3_000_000)).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.UseSoftirq, "5.3", "48d07c04b4cc", "rcu: Enable elimination of Tree-RCU softirq processing", true,
			"5.10 kernel/rcu/tree.c: static bool use_softirq = true; module_param(use_softirq, bool, 0444); PREEMPT_RT: the 5.10-rt queue's 5ffd75a96828 \"rcu: Use rcuc threads on PREEMPT_RT as we did\"",
			func(c *KnobContext) knob.Value { return knob.BoolValue(knob.MustLookup(knob.UseSoftirq), !c.rt()) }).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.NoCBs, "3.7", "", "", false, "5.10 kernel/rcu/tree_plugin.h rcu_nocb_setup (__setup(\"rcu_nocbs=\"), \"all\" or a CPU list)",
			func(*KnobContext) knob.Value { return knob.CPUValue(knob.MustLookup(knob.NoCBs), knob.CPUSet{}) }).
			with(func(l *LineKnob) { l.Check = all(needsTree, needsConfig(knob.ConfigNoCB), checkCPUs) }),
		lk(knob.MaxNetNamespaces, "4.9", "", "", false,
			"5.10 kernel/ucount.c UCOUNT_ENTRY(\"max_net_namespaces\"); net/core/net_namespace.c copy_net_ns: inc_net_namespaces fails with ENOSPC; cleanup_net: dec_net_namespaces; the default is max_threads/2 (kernel/fork.c)",
			intDefault(knob.MaxNetNamespaces, math.MaxInt32)),
	},
	"5.15": {
		lk(knob.RCUNormalAfterBoot, "5.12", "36221e109eb2", "rcu: Enable rcu_normal_after_boot unconditionally for RT", true,
			"tip-bot notice of 36221e109eb2 (core/rcu, 2021-01-04): static int rcu_normal_after_boot = IS_ENABLED(CONFIG_PREEMPT_RT); the module_param only #ifndef CONFIG_PREEMPT_RT",
			func(c *KnobContext) knob.Value {
				return knob.IntValue(knob.MustLookup(knob.RCUNormalAfterBoot), b2i(c.rt()))
			}).
			with(func(l *LineKnob) {
				l.Check = all(needsTree, func(c *KnobContext, v knob.Value) error {
					if c.rt() {
						return fmt.Errorf("%s: PREEMPT_RT kernels from 5.12 (36221e109eb2) to 5.15 have no such parameter (it is forced on); 5.16 made it settable again with NO_HZ_FULL (ebb6d30d9ed1)", v.Def().Name)
					}
					return nil
				})
			}),
		lk(knob.UseSoftirq, "5.12", "8b9a0ecc7ef5", "rcu: Unconditionally use rcuc threads on PREEMPT_RT", true,
			"6.1 kernel/rcu/tree.c: static bool use_softirq = !IS_ENABLED(CONFIG_PREEMPT_RT); the commit is in the -rcu tree's revision list with 36221e109eb2 (the RCU pull for 5.12, January 2021)",
			func(c *KnobContext) knob.Value { return knob.BoolValue(knob.MustLookup(knob.UseSoftirq), !c.rt()) }).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.UnregisterTimeout, "5.13", "5aa3afe107d9", "net: make unregister netdev warning timeout configurable", true,
			"6.1 net/core/sysctl_net_core.c netdev_unregister_timeout_secs: proc_dointvec_minmax, 1..3600 (6c996e19949b set the minimum to 1); net/core/dev.c netdev_wait_allrefs_any warns every netdev_unregister_timeout_secs",
			intDefault(knob.UnregisterTimeout, 10)),
	},
	"6.1": {
		lk(knob.ConfigNoCB, "3.7", "", "", false, "Debian 6.1's config: CONFIG_RCU_NOCB_CPU=y, no CPU offloaded by default", boolDefault(knob.ConfigNoCB, true)),
		lk(knob.RCUNormalAfterBoot, "5.16", "ebb6d30d9ed1", "rcu: Make rcu_normal_after_boot writable again", true,
			"6.1 kernel/rcu/update.c: = IS_ENABLED(CONFIG_PREEMPT_RT); module_param(..., 0444) #if !defined(CONFIG_PREEMPT_RT) || defined(CONFIG_NO_HZ_FULL) (Debian's RT build has NO_HZ_FULL=y)",
			func(c *KnobContext) knob.Value {
				return knob.IntValue(knob.MustLookup(knob.RCUNormalAfterBoot), b2i(c.rt()))
			}).
			with(func(l *LineKnob) { l.Check = needsTree }),
		lk(knob.NohzFull, "3.10", "", "", false,
			"6.1 kernel/time/tick-sched.c housekeeping: nohz_full= CPUs are offloaded (rcu_nocb_mask gets them); the boot CPU stays a housekeeping CPU when every CPU is listed (Debian 6.1: NO_HZ_FULL=y)",
			func(*KnobContext) knob.Value { return knob.CPUValue(knob.MustLookup(knob.NohzFull), knob.CPUSet{}) }).
			with(func(l *LineKnob) { l.Check = all(needsTree, needsConfig(knob.ConfigNoCB), checkCPUs) }),
		preemptModeKnob("5.12", "826bfeb37bb4", "preempt/dynamic: Support dynamic preempt with preempt= boot option", true,
			"6.1 kernel/sched/core.c setup_preempt_mode (__setup(\"preempt=\"), none/voluntary/full) on Debian's PREEMPT_DYNAMIC build; its RCU is PREEMPT_RCU whatever the mode"),
	},
	"6.6": {
		lk(knob.ConfigLazy, "6.2", "3cb278e73be5", "rcu: Make call_rcu() lazy to save power", true,
			"6.6 kernel/rcu/Kconfig RCU_LAZY (depends on RCU_NOCB_CPU, default n); kernel/rcu/tree_nocb.h LAZY_FLUSH_JIFFIES (10*HZ)", boolDefault(knob.ConfigLazy, false)).
			with(func(l *LineKnob) {
				l.Check = func(c *KnobContext, v knob.Value) error {
					if v.Bool() && !c.Value(knob.ConfigNoCB).Bool() {
						return fmt.Errorf("CONFIG_RCU_LAZY=y depends on CONFIG_RCU_NOCB_CPU=y")
					}
					return nil
				}
			}),
	},
	"6.12": {
		lk(knob.ConfigLazy, "6.2", "3cb278e73be5", "rcu: Make call_rcu() lazy to save power", true,
			"Debian 6.12's config: CONFIG_RCU_LAZY=y (debian/config/config of linux 6.12.107-1)", boolDefault(knob.ConfigLazy, true)).
			with(func(l *LineKnob) {
				l.Check = func(c *KnobContext, v knob.Value) error {
					if v.Bool() && !c.Value(knob.ConfigNoCB).Bool() {
						return fmt.Errorf("CONFIG_RCU_LAZY=y depends on CONFIG_RCU_NOCB_CPU=y")
					}
					return nil
				}
			}),
		lk(knob.EnableLazy, "6.9", "", "rcu: Provide a boot time parameter to control lazy RCU", false,
			"6.12 kernel/rcu/tree.c: static bool enable_rcu_lazy = !IS_ENABLED(CONFIG_RCU_LAZY_DEFAULT_OFF); module_param(enable_rcu_lazy, bool, 0444) (the RCU pull for 6.9 names the commit; its id changed across rebases)",
			boolDefault(knob.EnableLazy, true)).
			with(func(l *LineKnob) { l.Check = all(needsTree, needsConfig(knob.ConfigLazy)) }),
		lk(knob.WakeFromGP, "6.10", "988f569ae041", "rcu: Reduce synchronize_rcu() latency", true,
			"6.12 kernel/rcu/tree.c: static int rcu_normal_wake_from_gp; module_param(..., int, 0644); synchronize_rcu_normal tests !READ_ONCE(rcu_normal_wake_from_gp) (988f569ae041 is in the RCU tree after v6.9-rc4, 2024-04-18)",
			intDefault(knob.WakeFromGP, 0)).
			with(func(l *LineKnob) {
				l.Check = needsTree
				l.On = func(v knob.Value) bool { return v.Int != 0 }
			}),
	},
	"6.18": {
		preemptModeKnob("6.13", "476e8583ca16", "sched, x86: Enable Lazy preemption", true,
			"6.18 kernel/sched/core.c sched_dynamic_mode (l.7638-7657): none and voluntary unless CONFIG_PREEMPT_RT, full, and lazy with ARCH_HAS_PREEMPT_LAZY (x86 since 476e8583ca16, 6.13, with 7c70cb94d29c \"sched: Add Lazy preemption model\" and 35772d627b55 \"sched: Enable PREEMPT_DYNAMIC for PREEMPT_RT\"; the tip tree's revision list of 2024-11-06); preempt_dynamic_init boots lazy when CONFIG_PREEMPT_LAZY is the build's model (l.7756-7772); a 6.18 RT build's model was not read: full assumed"),
		lk(knob.WakeFromGP, "6.17", "a7f6af1322ad", "rcu: Enable rcu_normal_wake_from_gp on small systems", true,
			"6.18 kernel/rcu/tree.c: static int rcu_normal_wake_from_gp = -1; rcu_init sets it to 1 when num_possible_cpus() <= 16 (WAKE_FROM_GP_CPU_THRESHOLD); synchronize_rcu_normal tests < 1 (a7f6af1322ad in linux-next 2025-07-08)",
			func(c *KnobContext) knob.Value {
				v := int64(-1)
				if c.CPUs <= wakeFromGPCPUs {
					v = 1
				}
				return knob.IntValue(knob.MustLookup(knob.WakeFromGP), v)
			}).
			with(func(l *LineKnob) {
				l.Check = needsTree
				l.On = func(v knob.Value) bool { return v.Int >= 1 }
			}),
	},
	"7.2": {
		preemptModeKnob("7.x", "(not found)", "", false,
			"7.2.13 kernel/sched/core.c sched_dynamic_mode (l.7977-7995): none and voluntary only without CONFIG_PREEMPT_RT and CONFIG_ARCH_HAS_PREEMPT_LAZY (x86 selects it), so an x86 kernel takes full or lazy; preempt_dynamic_init (l.8095-8111) boots the build's model: lazy for Debian 7.2.13 (PREEMPT_LAZY), full for its RT build (CONFIG_PREEMPT=y)"),
		lk(knob.WakeFromGP, "7.x", "(not found)", "", false,
			"7.2.13 kernel/rcu/tree.c l.1632: static int rcu_normal_wake_from_gp = 1; module_param(..., int, 0644); rcu_init no longer sets it by CPU count; synchronize_rcu_normal tests < 1 or the latch (l.3312-3313)",
			intDefault(knob.WakeFromGP, 1)).
			with(func(l *LineKnob) {
				l.Check = needsTree
				l.On = func(v knob.Value) bool { return v.Int >= 1 }
			}),
	},
}

// preemptModeKnob is preempt= on a PREEMPT_DYNAMIC build, with the rules of
// the line's profile (PreemptLazy, NoNoneVoluntary, RTDynamic, RTLazy): on
// a stock build the booted model is the default and the value becomes the
// machine's model; on a dynamic PREEMPT_RT build (6.13 on) it chooses full
// or lazy and the kernel stays PREEMPT_RT.
func preemptModeKnob(since, commit, title string, confirmed bool, source string) LineKnob {
	d := knob.MustLookup(knob.PreemptMode)
	return lk(knob.PreemptMode, since, commit, title, confirmed, source, func(c *KnobContext) knob.Value {
		m := c.Preempt.String()
		if c.rt() {
			m = "full"
			if p := Profiles[c.Line]; p.RTDynamic && p.RTLazy {
				m = "lazy"
			}
		}
		return knob.ChoiceValue(d, m)
	}).with(func(l *LineKnob) {
		l.Applies = func(c *KnobContext) bool {
			if c.rt() {
				return Profiles[c.Line].RTDynamic
			}
			return c.RCU == "tree-preempt"
		}
		l.Check = func(c *KnobContext, v knob.Value) error {
			p := Profiles[c.Line]
			if c.rt() {
				switch {
				case !p.RTDynamic:
					return fmt.Errorf("preempt=%s: a PREEMPT_RT kernel of line %s is not PREEMPT_DYNAMIC (RT became dynamic in 6.13, 35772d627b55)", v, c.Line)
				case v.Choice() != "full" && v.Choice() != "lazy":
					return fmt.Errorf("preempt=%s: a PREEMPT_RT kernel takes preempt=full or lazy only (sched_dynamic_mode accepts none and voluntary only without CONFIG_PREEMPT_RT)", v)
				}
				return nil
			}
			if c.RCU != "tree-preempt" {
				return fmt.Errorf("preempt=%s needs the line's PREEMPT_DYNAMIC build, whose RCU is tree-preempt, not --rcu %s", v, c.RCU)
			}
			pre, err := sim.ParsePreempt(v.Choice())
			if err != nil {
				return err
			}
			return p.checkPreempt(pre)
		}
	})
}

// wakeFromGPCPUs is WAKE_FROM_GP_CPU_THRESHOLD (6.17 on).
const wakeFromGPCPUs = 16

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// knobsFor is the previous line's knobs plus the line's own entries.
func knobsFor(line string, prev []LineKnob) []LineKnob {
	out := append([]LineKnob(nil), prev...)
	for _, k := range knobHistory[line] {
		replaced := false
		for i := range out {
			if out[i].Def == k.Def {
				out[i], replaced = k, true
			}
		}
		if !replaced {
			out = append(out, k)
		}
	}
	return out
}
