package netdev

// LeakReference takes a reference that nothing will drop (a leak).
func LeakReference(d *Device) { d.hold(HolderRegistration) }
