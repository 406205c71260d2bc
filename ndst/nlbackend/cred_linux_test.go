package nlbackend

import "syscall"

// syscallCred runs a child as nobody, with no capabilities.
var syscallCred = syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
