package main

import (
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// A command whose standard output is a pipe its reader closed (meterstore
// query … | head -2) must still end as it would have: a Go program that
// does not ask for SIGPIPE is killed by it on its first write to the
// closed pipe, before any deferred Close runs, which leaves the private
// PostgreSQL server it started running until the next command takes it
// over. Asked for, SIGPIPE only makes the write fail with EPIPE; the
// command then returns that error through its deferred cleanup (the store
// closes, and the server stops if it was the last user) and exits as a
// process killed by SIGPIPE would, silently with 128+13.

// exitBrokenPipe is the exit status of a command whose output pipe broke.
const exitBrokenPipe = 128 + int(syscall.SIGPIPE)

// catchSIGPIPE turns the SIGPIPE of a write to a closed pipe into the
// write's EPIPE error, for standard output and error too. The signals
// themselves are dropped: the error says what they would.
func catchSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// pipeOut is standard output as the commands write to it; it remembers
// that a write failed because the reader went away.
type pipeOut struct {
	f      *os.File
	broken atomic.Bool
}

func (w *pipeOut) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		w.broken.Store(true)
	}
	return n, err
}

// stoppedByPipe reports whether err is a command's failure to write to
// its standard output after the reader closed it: a clean stop, not an
// error to report. A broken pipe elsewhere (a connection) is an error.
func (w *pipeOut) stoppedByPipe(err error) bool {
	return err != nil && w.broken.Load() && errors.Is(err, syscall.EPIPE)
}
