//go:build !linux

package nlbackend

import (
	"context"
	"errors"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

// ErrNotLinux is returned on systems other than Linux.
var ErrNotLinux = errors.New("netlink backend needs Linux (rtnetlink and network namespaces)")

// Backend is the netlink backend; on this system it cannot be opened.
type Backend struct{}

// Open fails: the netlink backend needs Linux.
func Open(ctx context.Context, o Options) (*Backend, error) {
	if _, err := o.normalize(); err != nil {
		return nil, err
	}
	return nil, ErrNotLinux
}

// Reset fails: the netlink backend needs Linux.
func Reset(ctx context.Context, o Options) error {
	if _, err := o.normalize(); err != nil {
		return err
	}
	return ErrNotLinux
}

// Name implements ndst.Backend.
func (b *Backend) Name() string { return "netlink" }

// Add implements ndst.Backend.
func (b *Backend) Add(context.Context, ndst.AddRequest) (*ndst.Result, error) {
	return nil, ErrNotLinux
}

// Del implements ndst.Backend.
func (b *Backend) Del(context.Context, ndst.DelRequest) (*ndst.Result, error) {
	return nil, ErrNotLinux
}

// List implements ndst.Backend.
func (b *Backend) List(context.Context, ndst.ListRequest) ([]ndst.Device, error) {
	return nil, ErrNotLinux
}

// Close implements ndst.Backend.
func (b *Backend) Close() error { return nil }

var _ ndst.Backend = (*Backend)(nil)

// RoundTrips fails: the netlink backend needs Linux.
func (b *Backend) RoundTrips(n int) ([]time.Duration, error) { return nil, ErrNotLinux }

// Host probes the host.
func (b *Backend) Host() HostFacts { return ProbeHost() }

// ResetNamespace fails: the netlink backend needs Linux.
func ResetNamespace(ctx context.Context, o Options) (*ResetReport, error) {
	if _, err := o.normalize(); err != nil {
		return nil, err
	}
	return nil, ErrNotLinux
}

// ResetAll fails: the netlink backend needs Linux.
func ResetAll(ctx context.Context, o Options) (*ResetReport, error) { return ResetNamespace(ctx, o) }

// DropNamespaces fails: the netlink backend needs Linux.
func (b *Backend) DropNamespaces(ndst.NetnsTemplate) (int, error) { return 0, ErrNotLinux }

// CheckChange fails: nothing can be changed here.
func (b *Backend) CheckChange(string) error { return ErrNotLinux }

// Root reports false: nothing can be opened here.
func (b *Backend) Root() bool { return false }

// Created reports false: nothing can be created here.
func (b *Backend) Created() bool { return false }

// Netns returns "": no namespace is open.
func (b *Backend) Netns() string { return "" }

// NetnsAdd fails: the netlink backend needs Linux.
func (b *Backend) NetnsAdd(context.Context, ndst.NetnsAddRequest) (*ndst.Result, error) {
	return nil, ErrNotLinux
}

// NetnsDel fails: the netlink backend needs Linux.
func (b *Backend) NetnsDel(context.Context, ndst.NetnsDelRequest) (*ndst.Result, error) {
	return nil, ErrNotLinux
}

// NetnsList fails: the netlink backend needs Linux.
func (b *Backend) NetnsList(context.Context, ndst.NetnsListRequest) ([]ndst.Netns, error) {
	return nil, ErrNotLinux
}

var _ ndst.NetnsBackend = (*Backend)(nil)

// RequestGaps fails: the netlink backend needs Linux.
func (b *Backend) RequestGaps(context.Context, int) ([]int64, error) { return nil, ErrNotLinux }

// Unshare fails: the netlink backend needs Linux.
func (b *Backend) Unshare(context.Context, ndst.UnshareRequest) (*ndst.Result, error) {
	return nil, ErrNotLinux
}
