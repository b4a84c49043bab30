//go:build !linux

package supervisor

// listeningAddrs is unknown off Linux: there is no /proc to read.
func listeningAddrs(int) []string { return nil }
