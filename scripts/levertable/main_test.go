package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/advise"
)

// A record of one host verification and one VM cell (both boots the same
// recorded guest) makes its table: the VM cells predicted afresh, the
// host's as measured, each lever's verdict from its cells.
func TestBuildTable(t *testing.T) {
	dir := t.TempDir()
	guest, err := os.ReadFile("../../bench/testdata/guests/6.1-1-cpu-none.log")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vm-a.log", "vm-a.log.with"} {
		if err := os.WriteFile(filepath.Join(dir, f), guest, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := advise.Advice{Op: "advise", Workload: advise.Workload{Devices: 1000, OneByOne: true}, Verified: true,
		NoEffect: []advise.Lever{{Kind: advise.KindRuntime, Setting: "rcupdate.rcu_expedited=1", RuntimeSettable: true, Path: "/sys/kernel/rcu_expedited",
			BeforeNS: 16e9, AfterNS: 16e9, Measured: &advise.Measurement{BeforeNS: 16.2e9, AfterNS: 16.1e9,
				BeforeRunsNS: []int64{16.2e9, 16.0e9, 16.4e9}, AfterRunsNS: []int64{16.1e9, 16.1e9, 16.2e9}, IdleShare: 0.93}}},
		Slower: []advise.Lever{{Kind: advise.KindRuntime, Setting: "rcutree.rcu_divisor=0", RuntimeSettable: true, Path: "/sys/module/rcutree/parameters/rcu_divisor",
			BeforeNS: 16e9, AfterNS: 16e9, Measured: &advise.Measurement{Skipped: "read-only at runtime"}}},
	}
	b, _ := json.Marshal(a)
	if err := os.WriteFile(filepath.Join(dir, "host.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := `{"host": {"kernel": "6.18.0-test", "verify": ["host.json"]}, "vm": [{"kernel": "linux-image-amd64", "cpus": 1, "params": ["rcu_nocbs=all"], "without": "vm-a.log", "with": "vm-a.log.with"}], "load": ["0.1", "0.2"]}`
	if err := os.WriteFile(filepath.Join(dir, "levers.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	cells, man, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6 {
		t.Fatalf("Build: %d cells, want 2 host levers and 4 VM rows: %+v", len(cells), cells)
	}
	host := cells[0]
	if !host.OK() || host.MEffect != "none" || host.Threshold != 0.05 {
		t.Errorf("host cell %+v: want within, no effect either way, the threshold 5%% (the runs spread 2.5%%)", host)
	}
	var out strings.Builder
	if err := WriteTable(&out, cells, man, true); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"| `rcupdate.rcu_expedited=1` | host 6.18.0-test | 1000 devices, one by one | 16.200s → 16.100s | 16.000s → 16.000s | -0.6% | none -1% / none +0% (±5%) | 93% |  |",
		"| `rcutree.rcu_divisor=0` | host 6.18.0-test | 1000 devices, one by one | skipped: read-only at runtime |",
		"| `rcu_nocbs=all` | VM amd64, 1 CPU | 1000 devices, one by one |",
		"- `rcupdate.rcu_expedited=1`: verified",
		"- `rcutree.rcu_divisor=0`: not measured",
		"- `rcu_nocbs=all`: not verified",
		"host load average before / after the run: 0.1 / 0.2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "levers.json"), []byte(`{"vm": [{"kernel": "x", "cpus": 1, "params": ["a=1"], "without": "nope.log", "with": "nope.log"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Build(context.Background(), dir); err == nil {
		t.Error("Build with a missing transcript succeeded")
	}
}

// The README's lever tables are the ones this tree prints from the records
// they name (testdata/2026-12-02: this host and 1-CPU guests;
// testdata/2026-12-02-vm2: 2-CPU guests, a later run): a model change that
// moves a cell's prediction must move the README with it.
func TestREADMETable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, record := range []string{"testdata/2026-12-02", "testdata/2026-12-02-vm2"} {
		cells, m, err := Build(context.Background(), record)
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		if err := WriteTable(&want, cells, m, true); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "scripts/levertable/"+record+"`") {
			t.Fatalf("README.md does not name the record %s that its lever table is printed from", record)
		}
		for _, line := range strings.Split(want.String(), "\n") {
			if strings.HasPrefix(line, "| `") && !strings.Contains(string(readme), line+"\n") {
				t.Errorf("README.md lacks this row of 'go run ./scripts/levertable -markdown scripts/levertable/%s':\n%s", record, line)
			}
		}
	}
}
