package main

import (
	"context"
	"time"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/emu"
	"github.com/ndst-project/ndst/ndst/modbackend"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"go.uber.org/zap"
)

// emuConfig builds the emulated kernel's configuration from the flags.
func (g *globalOptions) emuConfig() (emu.Config, error) {
	c := emu.Config{
		Profile: g.profile, Strategy: g.strategy, HZ: g.hz, CPUs: g.cpus,
		Preempt: g.preempt, RCU: g.rcu, Seed: g.seed, Watchdog: g.emuWatchdog(),
		NameAlloc: g.nameAlloc, StatePath: g.state, WaitLock: g.waitLock,
		RefTracker: g.refTracker, TracePath: g.trace,
		Params: g.params, HostParams: g.hostParams, HostParamsFrom: g.hostParamsFrom,
		MachineNote: g.machineNote(), MachineNotes: g.machineNotes,
	}
	if !g.preemptSet && len(g.machineSettings) == 0 {
		c.Preempt = "" // the line's default (netdev.Profile.DefaultPreempt)
	}
	for _, h := range g.holds {
		x, err := emu.ParseHold(h)
		if err != nil {
			return c, err
		}
		c.Holds = append(c.Holds, x)
	}
	if g.giveUpSet {
		if g.giveUp <= 0 {
			return c, ndst.Usagef("--give-up must be positive, got %v", g.giveUp)
		}
		c.GiveUp = g.giveUp // else the registry's default for the line
	}
	if g.netnsSet {
		c.Netns = g.netns
	}
	if g.costs != "" {
		t, err := costs.Load(g.costs)
		if err != nil {
			return c, ndst.Usagef("--costs: %v", err) // a bad flag value
		}
		c.Costs = t
		c.CostsPath = g.costs
		if n := g.tableMachineNote(t); n != "" {
			c.MachineNotes = append(c.MachineNotes, n)
		}
		// --machine host with a calibrated table runs its machine: its
		// stalls, wake-up latency and late ticks as well as its kernel,
		// as ndst predict does (calibrate.HostModel).
		if len(g.machineSettings) > 0 && t.Host != nil {
			var note string
			c.Stalls, c.WakeLatency, c.TickLateness, note = calibrate.HostMachine(t.Host)
			c.RCUOtherWork = calibrate.HostOtherWork(t.Host)
			if note != "" {
				c.MachineNotes = append(c.MachineNotes, note)
			}
		}
	}
	return c, nil
}

// emuWatchdog is the emulated kernel's soft-lockup threshold: the kernel
// line's unless --watchdog was given, and none for --watchdog 0.
func (g *globalOptions) emuWatchdog() time.Duration {
	switch {
	case !g.watchdogSet:
		return 0
	case g.watchdog == 0:
		return -1
	}
	return g.watchdog
}

// openBackend opens the backend chosen with --backend. Only a command that
// creates devices may create the netlink or module backend's namespace.
func (g *globalOptions) openBackend(ctx context.Context, creates bool) (ndst.Backend, error) {
	switch g.backend {
	case "sim":
		c, err := g.emuConfig()
		if err != nil {
			return nil, err
		}
		return emu.Open(ctx, c)
	case "netlink":
		o := g.nlOptions()
		o.NoCreate = !creates
		holds, err := g.nlHolds()
		if err != nil {
			return nil, err
		}
		o.Holds = holds
		return nlbackend.Open(ctx, o)
	case "module":
		o := g.nlOptions()
		return modbackend.Open(ctx, modbackend.Options{
			Netns: o.Netns, NoCreate: !creates, AllowRootNS: o.AllowRootNS, Logger: o.Logger, Notef: o.Notef,
		})
	}
	return nil, ndst.Usagef("unknown backend %q (want sim, netlink or module)", g.backend)
}

// nlHolds parses --hold for the netlink backend, which holds a genuine
// reference the way the socket holder does: a packet socket's send.
func (g *globalOptions) nlHolds() ([]nlbackend.Hold, error) {
	var out []nlbackend.Hold
	for _, h := range g.holds {
		x, err := emu.ParseHold(h)
		if err != nil {
			return nil, err
		}
		if x.Holder.String() != "socket" {
			return nil, ndst.Usagef("--hold %q: on the real kernel ndst holds a reference only as a packet socket's send does: socket[@DEVICE]=DURATION|forever", h)
		}
		out = append(out, nlbackend.Hold{Device: x.Device, For: time.Duration(x.For), Forever: x.Forever})
	}
	return out, nil
}

func (g *globalOptions) nlOptions() nlbackend.Options {
	return nlbackend.Options{
		Netns: g.netns, Kind: g.kind, KindExplicit: g.kindExplicit,
		AllowRootNS: g.allowRootNS, Logger: g.logger(),
		WaitLock: g.waitLock, NameExplicit: g.nameExplicit, NoMemoryCheck: g.noMemoryCheck,
		Warnf: func(format string, args ...any) { g.note("note: "+format, args...) },
		// Notices also land in Result.Notes, which the text output prints;
		// with --json they go to stderr too, so a person still sees them.
		Notef: func(format string, args ...any) {
			if g.json {
				g.note(format, args...)
			}
		},
	}
}

// logger returns the zap logger for the -vv debug log on stderr.
func (g *globalOptions) logger() *zap.Logger {
	if g.log != nil {
		return g.log
	}
	if g.verbose < 2 {
		g.log = zap.NewNop()
		return g.log
	}
	cfg := zap.NewDevelopmentConfig()
	cfg.EncoderConfig.TimeKey = "" // virtual time is a field; wall time would break repeatability
	cfg.EncoderConfig.CallerKey = ""
	cfg.OutputPaths = []string{"stderr"}
	l, err := cfg.Build()
	if err != nil {
		l = zap.NewNop()
	}
	g.log = l
	return l
}
