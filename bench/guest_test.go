package bench

import (
	"strings"
	"testing"
)

const transcript = `@@ndst-vm host accel=tcg cpus=2 preempt=none release=6.1.0-57-amd64 hz=250
@@ndst-vm module dummy loaded
@@ndst-vm guest release=6.1.0-57-amd64 cpus=2 preempt=none uptime=2.14
@@ndst-vm begin 1 --json calibrate
{"hz":250,"table":{"source":"calibrate:6.1.0-57-amd64","costs_ns":{"register":300000,"unregister":250000,"free":6000,"unregister_batch":900000,"syscall":5000},"host":{"kernel":"6.1.0-57-amd64","hz":250,"cpus":2,"preempt":"none"}}}
@@ndst-vm stderr 1
@@ndst-vm end 1 exit=0 seconds=9.1
@@ndst-vm begin 2 --json add 100
{"op":"add","backend":"netlink","count":100,"virtual_ns":null,"wall_ns":70000000,"kind":"dummy","batched":false,"result":"ok"}
@@ndst-vm stderr 2
@@ndst-vm end 2 exit=0 seconds=0.2
@@ndst-vm begin 3 --json del 1 2147483647
{"op":"del","backend":"netlink","count":100,"skipped":1,"virtual_ns":null,"wall_ns":40000000,"batched":true,"result":"ok"}
@@ndst-vm stderr 3
@@ndst-vm end 3 exit=0 seconds=0.1
@@ndst-vm begin 4 --json add 100
{"op":"add","backend":"netlink","count":100,"virtual_ns":null,"wall_ns":71000000,"kind":"dummy","batched":false,"result":"ok"}
@@ndst-vm stderr 4
@@ndst-vm end 4 exit=0 seconds=0.2
@@ndst-vm begin 5 --json del 1 2147483647 --one-by-one
{"op":"del","backend":"netlink","count":100,"skipped":1,"virtual_ns":null,"wall_ns":1750000000,"batched":false,"result":"ok"}
@@ndst-vm stderr 5
@@ndst-vm end 5 exit=0 seconds=1.8
@@ndst-vm done
`

func TestParseGuestLog(t *testing.T) {
	table, rec, err := ParseGuestLog(strings.NewReader(transcript))
	if err != nil {
		t.Fatalf("ParseGuestLog() = %v", err)
	}
	if table.Host == nil || table.Host.CPUs != 2 || table.Host.HZ != 250 || table.Costs["unregister"] != 250000 {
		t.Errorf("guest table = %+v, want the guest's calibration (2 CPUs, HZ 250)", table)
	}
	if got := rec.Del[100]["batched"]; len(got) != 1 || got[0] != 40000000 {
		t.Errorf("batched del runs = %v, want [40000000]", got)
	}
	if got := rec.Del[100]["one-by-one"]; len(got) != 1 || got[0] != 1750000000 {
		t.Errorf("one-by-one del runs = %v, want [1750000000]", got)
	}
	if rec.Kind != "dummy" || !strings.Contains(rec.Source, "6.1.0-57") || len(rec.Add[100]) != 2 {
		t.Errorf("recorded = %+v, want kind dummy from the guest 6.1.0-57 with two adds", rec)
	}
	// The emulated side runs with the guest's settings.
	s := &PredictSpec{Counts: []int{100}, Runs: 1, SimRuns: 2, Costs: table, Recorded: rec}
	p, err := Predict(t.Context(), s)
	if err != nil {
		t.Fatalf("Predict(from guest) = %v", err)
	}
	if p.CPUs != 2 || p.HZ != 250 || len(p.Rows) != 3 || p.Rows[0].MeasuredNS != 40000000 || p.Rows[0].PredictedNS <= 0 {
		t.Errorf("prediction = %+v, want 2 CPUs at HZ 250 and three rows measured in the guest", p)
	}
}

func TestParseGuestLogRejectsFailures(t *testing.T) {
	bad := strings.Replace(transcript, "@@ndst-vm end 3 exit=0", "@@ndst-vm end 3 exit=1", 1)
	if _, _, err := ParseGuestLog(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("ParseGuestLog(a failed guest command) = %v, want an error", err)
	}
	// calibrate's exit 1 is a closure that failed, its report written:
	// the transcript still parses.
	open1 := strings.Replace(transcript, "@@ndst-vm end 1 exit=0", "@@ndst-vm end 1 exit=1", 1)
	if _, _, err := ParseGuestLog(strings.NewReader(open1)); err != nil {
		t.Errorf("ParseGuestLog(calibrate exited 1, closure failed) = %v, want it parsed", err)
	}
	noCal := transcript[strings.Index(transcript, "@@ndst-vm begin 2"):]
	if _, _, err := ParseGuestLog(strings.NewReader(noCal)); err == nil || !strings.Contains(err.Error(), "calibration") {
		t.Errorf("ParseGuestLog(no calibration) = %v, want an error", err)
	}
}
