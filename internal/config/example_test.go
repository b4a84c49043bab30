package config_test

import (
	"fmt"

	"github.com/sluicehq/sluice/internal/config"
)

func ExampleParse() {
	src := `
server:
  keepAliveTimeout: 65000   # milliseconds, as the Node.js server reads it
  maxHeaderBytes: 32KiB
  backpressure:
    eluMax: 0.9             # the Node.js server's name for saturationMax
workers:
  command: node render.js
  count: 4
`
	cfg, err := config.Parse("sluice.yaml", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Server.KeepAliveTimeout, cfg.Server.MaxHeaderBytes, cfg.Server.Backpressure.SaturationMax)
	limit, adaptive := cfg.Workers.Concurrency.Limit(cfg.Workers.MaxConcurrency)
	fmt.Println(cfg.Workers.Command, cfg.Workers.Count.Resolve(8), limit, adaptive)
	// Output:
	// 1m5s 32768 0.9
	// [node render.js] 4 64 true
}

func ExampleParse_errors() {
	src := `
server:
  keepAliveTimout: 65s
  backpressure:
    minLimit: 50
    maxLimit: 10
workers:
  count: 0
`
	_, err := config.Parse("sluice.yaml", []byte(src))
	for _, e := range config.List(err) {
		fmt.Println(e)
	}
	// Output:
	// sluice.yaml:3: server.keepAliveTimout: unknown key (did you mean keepAliveTimeout?)
	// sluice.yaml:5: server.backpressure.minLimit: 50 is greater than maxLimit (10)
	// sluice.yaml:7: workers.command: must name the program to run (here, or after -- on the sluice serve command line)
	// sluice.yaml:8: workers.count: 0 is not a positive whole number or "auto"
}

func ExampleParseSize() {
	for _, s := range []string{"65536", "64KiB", "64KB", "1.5MiB"} {
		n, _ := config.ParseSize(s)
		fmt.Println(s, n)
	}
	// Output:
	// 65536 65536
	// 64KiB 65536
	// 64KB 64000
	// 1.5MiB 1572864
}

func ExampleParseDuration() {
	for _, s := range []string{"65000", "65s", "1m5s"} {
		d, _ := config.ParseDuration(s)
		fmt.Println(s, d)
	}
	// Output:
	// 65000 1m5s
	// 65s 1m5s
	// 1m5s 1m5s
}
