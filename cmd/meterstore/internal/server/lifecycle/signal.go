package lifecycle

import (
	"os"
	"os/signal"
	"syscall"
)

// watchSecondSignal calls atOnce on the second SIGTERM or SIGINT from now
// on: the first cancels the command's context (see the command's main)
// and begins the shutdown, which a second does not wait for. It returns
// the function that stops watching; without atOnce it watches nothing.
func watchSecondSignal(atOnce func(os.Signal)) (stop func()) {
	if atOnce == nil {
		return func() {}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 0; ; {
			select {
			case sig := <-sigs:
				if n++; n == 2 {
					atOnce(sig)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
