//go:build !linux

package modbackend

import (
	"context"
	"errors"
	"time"

	"github.com/ndst-project/ndst/ndst"
)

// ErrNotLinux is returned on systems other than Linux.
var ErrNotLinux = errors.New("module backend needs Linux (the ndst kernel module)")

// Backend is the module backend; on this system it cannot be opened.
type Backend struct{}

var _ ndst.Backend = (*Backend)(nil)

// Loaded fails: there is no Linux kernel module here.
func Loaded() error { return ErrNotLinux }

// Open fails: the module backend needs Linux.
func Open(context.Context, Options) (*Backend, error) { return nil, ErrNotLinux }

// Name implements ndst.Backend.
func (b *Backend) Name() string { return "module" }

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

// Devices fails: the module backend needs Linux.
func (b *Backend) Devices() ([]ModDevice, error) { return nil, ErrNotLinux }

// Holds fails: the module backend needs Linux.
func (b *Backend) Holds() ([]HoldInfo, error) { return nil, ErrNotLinux }

// Hold fails: the module backend needs Linux.
func (b *Backend) Hold(context.Context, int, time.Duration) error { return ErrNotLinux }

// Release fails: the module backend needs Linux.
func (b *Backend) Release(context.Context, int) error { return ErrNotLinux }
