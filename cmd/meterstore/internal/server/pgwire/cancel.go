package pgwire

import (
	"crypto/rand"
	"crypto/subtle"
	"sync"
)

// keys are the cancel keys of the sessions open: a process ID, unique
// among them, and a random secret a CancelRequest must repeat.
type keys struct {
	mu      sync.Mutex
	next    uint32
	session map[uint32]*session
}

// add gives s a process ID and secret key and records it.
func (k *keys) add(s *session) {
	var secret [4]byte
	rand.Read(secret[:]) // crypto/rand never fails
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.session == nil {
		k.session = map[uint32]*session{}
	}
	for {
		k.next++
		if _, taken := k.session[k.next]; !taken && k.next != 0 {
			break
		}
	}
	s.pid, s.secret = k.next, secret
	k.session[s.pid] = s
}

// remove forgets s.
func (k *keys) remove(s *session) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.session[s.pid] == s {
		delete(k.session, s.pid)
	}
}

// cancel cancels the statement running in the session of pid, if secret
// is its key; a wrong key does nothing, as PostgreSQL does, so that a
// guess learns nothing.
func (k *keys) cancel(pid uint32, secret []byte) {
	k.mu.Lock()
	s := k.session[pid]
	k.mu.Unlock()
	if s == nil || len(secret) != len(s.secret) || subtle.ConstantTimeCompare(secret, s.secret[:]) != 1 {
		return
	}
	s.cancelRunning()
}
