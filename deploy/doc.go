// Package deploy holds the files that run sluice in production, and the
// tests that keep them true to the code they deploy. It has no Go API.
//
//   - kubernetes/: the ConfigMap (sluice.yaml), Deployment, Service,
//     PodDisruptionBudget and an HPA example for a Node.js SSR fleet;
//   - systemd/: a unit and the sluice.yaml it runs;
//   - prometheus/: alerting rules, and prometheus-adapter rules for the HPA;
//   - ../Dockerfile and ../.dockerignore: the images.
//
// A deployment file states facts about the code: the paths of the probes,
// the names of the metrics, how long a shutdown can take. The tests read
// them from the code, so that a change on either side that breaks the other
// fails `go test`:
//
//   - the Kubernetes grace period and the systemd stop timeout exceed the
//     worst-case shutdown, computed from internal/config's defaults and the
//     shipped sluice.yaml, and checked against a real sluice whose worker
//     hangs;
//   - the shipped sluice.yaml files validate, with no warning;
//   - the probes ask for the configured health and readiness paths;
//   - every container runs as non-root, without privilege escalation, on a
//     read-only root, with every capability dropped;
//   - every metric the alerting and adapter rules name is exported by a
//     running sluice's /metrics;
//   - the images run as non-root under an init, and their build context
//     keeps every file the build needs;
//   - LICENSE is the Apache License 2.0.
package deploy
