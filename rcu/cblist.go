package rcu

// cblist is one CPU's RCU callbacks in queue order, split into the kernel's
// four segments (struct rcu_data's nxttail[] in 2.6.3x, struct
// rcu_segcblist in modern kernels; Classic RCU's donelist and its three
// nxtlist parts map onto the same four): DONE callbacks may run now; WAIT
// wait for the current GP; NEXT_READY for the one after; NEXT are not yet
// assigned a GP. Each implementation moves the boundaries as its kernel
// does; the list only keeps them consistent.
type cblist struct {
	cbs  []callback
	head int // first callback not yet invoked
	// tail[s] is one past the last callback of segment s; segment s is
	// cbs[start(s):tail[s]] and tail[segNext] == len(cbs).
	tail [nSegs]int
	// gp holds the GP numbers of WAIT and NEXT_READY (modern Tree RCU).
	gp [nSegs]uint64
}

type callback struct{ fn func() }

// Segments.
const (
	segDone = iota
	segWait
	segNextReady
	segNext
	nSegs
)

func (l *cblist) start(s int) int {
	if s == segDone {
		return l.head
	}
	return l.tail[s-1]
}

// len is the number of callbacks not yet invoked.
func (l *cblist) len() int { return len(l.cbs) - l.head }

// segLen is the number of callbacks in segment s.
func (l *cblist) segLen(s int) int { return l.tail[s] - l.start(s) }

// ready reports whether DONE callbacks wait to be invoked.
func (l *cblist) ready() bool { return l.tail[segDone] > l.head }

// restEmpty reports whether every segment after s is empty.
func (l *cblist) restEmpty(s int) bool { return l.tail[s] == l.tail[segNext] }

// append queues fn in NEXT.
func (l *cblist) append(fn func()) {
	l.cbs = append(l.cbs, callback{fn})
	l.tail[segNext] = len(l.cbs)
}

// entrain queues fn at the end of the last non-empty segment, sharing that
// segment's GP (rcu_segcblist_entrain); it reports false when the list is
// empty.
func (l *cblist) entrain(fn func()) bool {
	last := -1
	for s := segNext; s >= segDone; s-- {
		if l.segLen(s) > 0 {
			last = s
			break
		}
	}
	if last < 0 {
		return false
	}
	l.cbs = append(l.cbs, callback{fn})
	for s := last; s < nSegs; s++ {
		l.tail[s] = len(l.cbs)
	}
	return true
}

// setTail moves the end of segment s to i, keeping the segments ordered:
// later segments never end before it, earlier ones never after.
func (l *cblist) setTail(s, i int) {
	l.tail[s] = i
	for k := s + 1; k < nSegs; k++ {
		l.tail[k] = max(l.tail[k], i)
	}
	for k := s - 1; k >= segDone; k-- {
		l.tail[k] = min(l.tail[k], i)
	}
}

// pop takes the first DONE callback.
func (l *cblist) pop() callback {
	cb := l.cbs[l.head]
	l.cbs[l.head] = callback{}
	l.head++
	if l.head > 1024 && l.head*2 > len(l.cbs) {
		n := copy(l.cbs, l.cbs[l.head:])
		clear(l.cbs[n:])
		l.cbs = l.cbs[:n]
		for s := range l.tail {
			l.tail[s] -= l.head
		}
		l.head = 0
	}
	return cb
}
