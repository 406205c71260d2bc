//go:build !linux

package hostknob

import "github.com/ndst-project/ndst/knob"

type host struct{}

func newHost() *host { return &host{} }

func (*host) read(d *knob.Def) Reading {
	return Reading{Name: d.Name, Missing: "not a Linux host: there is no running kernel to read"}
}
