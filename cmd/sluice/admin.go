package main

// adminServer is the admin listener. TODO: wire internal/admin once it lands.
type adminServer struct{ s *service }

func newAdminServer(s *service) *adminServer { return &adminServer{s: s} }
func (a *adminServer) start() error          { return nil }
func (a *adminServer) stop()                 {}
