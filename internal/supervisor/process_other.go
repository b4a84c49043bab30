//go:build !unix

package supervisor

import "errors"

func startProcess(procSpec) (process, error) {
	return nil, errors.New("supervisor: worker processes need a unix system")
}

// GuardMain returns at once: there are no worker processes here.
func GuardMain() {}
